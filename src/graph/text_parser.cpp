// Recursive-descent parser of the canonical graph text (grammar in docs/02-graph-format.md).
// Whitespace and newlines separate tokens; `#` starts a comment to the end of the line.
#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include "base/error.h"
#include "base/nesting.h"
#include "graph/text.h"

namespace fact::graph {
namespace {

enum class Tok { ident, name, integer, floating, string, punct, end };

struct Token {
  Tok kind = Tok::end;
  std::string text;  // ident/name (without %)/number spelling/decoded string/punct char
  int line = 1, col = 1;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : src_(text), source_(source) {
    next();
  }

  Graph parse_graph() {
    expect_ident("graph");
    Graph g;
    if (tok_.kind == Tok::string || tok_.kind == Tok::ident) {
      g.name = tok_.text;
      next();
    } else {
      error("expected a graph name");
    }
    expect_punct('{');
    bool done = false;
    while (!done) {
      if (tok_.kind == Tok::ident && tok_.text == "input") {
        next();
        g.inputs.push_back(placeholder(PlaceholderKind::user_input));
      } else if (tok_.kind == Tok::ident && kind_from_name(tok_.text) &&
                 tok_.text != "user_input") {
        auto kind = *kind_from_name(tok_.text);
        next();
        g.params.push_back(placeholder(kind));
      } else if (tok_.kind == Tok::ident && tok_.text == "output") {
        next();
        expect_punct('(');
        while (!is_punct(')')) {
          if (!g.outputs.empty()) expect_punct(',');
          g.outputs.push_back(use_name());
        }
        next();
        done = true;
      } else if (tok_.kind == Tok::name) {
        g.nodes.push_back(node());
      } else {
        error("expected input, parameter, buffer, constant, a node (%name ...) or output");
      }
    }
    expect_punct('}');
    if (tok_.kind != Tok::end) error("expected end of input after the graph");
    try {
      validate(g);
    } catch (const Error& e) {
      throw Error(std::string(source_) + ": " + e.what());
    }
    return g;
  }

 private:
  // ---- diagnostics -------------------------------------------------------------
  [[noreturn]] void error_at(const Token& t, const std::string& what) const {
    throw Error(std::string(source_) + ":" + std::to_string(t.line) + ":" +
                std::to_string(t.col) + ": " + what + ", found " + describe(t));
  }
  [[noreturn]] void error(const std::string& what) const { error_at(tok_, what); }
  // A diagnostic about the text at `t` itself (no "found ...").
  [[noreturn]] void fail_at(const Token& t, const std::string& what) const {
    throw Error(std::string(source_) + ":" + std::to_string(t.line) + ":" +
                std::to_string(t.col) + ": " + what);
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::end: return "end of input";
      case Tok::name: return "'%" + t.text + "'";
      case Tok::string: return quote(t.text);
      default: return "'" + t.text + "'";
    }
  }

  // ---- lexer -------------------------------------------------------------------
  char peek_char(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }
  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void next() {
    for (;;) {  // skip whitespace and comments
      char c = peek_char();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') advance();
      else if (c == '#') while (pos_ < src_.size() && peek_char() != '\n') advance();
      else break;
    }
    tok_ = Token{Tok::end, "", line_, col_};
    if (pos_ >= src_.size()) return;
    const size_t start = pos_;
    char c = peek_char();
    if (ident_start(c)) {
      while (ident_char(peek_char())) advance();
      tok_.kind = Tok::ident;
    } else if (c == '%') {
      advance();
      while (ident_char(peek_char())) advance();
      if (pos_ == start + 1) fail_at(tok_, "expected a value name after '%'");
      tok_.kind = Tok::name;
      tok_.text = std::string(src_.substr(start + 1, pos_ - start - 1));
      return;
    } else if (digit(c) || (c == '-' && (digit(peek_char(1)) || peek_char(1) == 'i'))) {
      lex_number();
    } else if (c == '"') {
      lex_string();
      return;
    } else if (std::string_view("{}()[],:=").find(c) != std::string_view::npos) {
      advance();
      tok_.kind = Tok::punct;
    } else {
      fail_at(tok_, std::string("unexpected character '") + c + "'");
    }
    tok_.text = std::string(src_.substr(start, pos_ - start));
  }
  void lex_number() {
    tok_.kind = Tok::integer;
    if (peek_char() == '-') advance();
    if (peek_char() == 'i') {  // -inf
      while (ident_char(peek_char())) advance();
      tok_.kind = Tok::floating;
      return;
    }
    while (digit(peek_char())) advance();
    if (peek_char() == '.') {
      tok_.kind = Tok::floating;
      advance();
      while (digit(peek_char())) advance();
    }
    if (peek_char() == 'e' || peek_char() == 'E') {
      tok_.kind = Tok::floating;
      advance();
      if (peek_char() == '+' || peek_char() == '-') advance();
      while (digit(peek_char())) advance();
    }
  }
  void lex_string() {
    tok_.kind = Tok::string;
    advance();  // opening quote
    std::string s;
    for (;;) {
      char c = peek_char();
      if (pos_ >= src_.size() || c == '\n') fail_at(tok_, "unterminated string");
      advance();
      if (c == '"') break;
      if (c != '\\') {
        s += c;
        continue;
      }
      char e = peek_char();
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case 'n': s += '\n'; break;
        case 't': s += '\t'; break;
        case 'r': s += '\r'; break;
        default: {
          fail_at(Token{Tok::punct, "", line_, col_},
                  std::string("unknown escape '\\") + e + "' in string (use \\\" \\\\ \\n \\t \\r)");
        }
      }
      advance();
    }
    tok_.text = std::move(s);
  }

  // ---- grammar helpers ---------------------------------------------------------
  bool is_punct(char c) const { return tok_.kind == Tok::punct && tok_.text[0] == c; }
  void expect_punct(char c) {
    if (!is_punct(c)) error(std::string("expected '") + c + "'");
    next();
  }
  void expect_ident(std::string_view word) {
    if (tok_.kind != Tok::ident || tok_.text != word) error("expected '" + std::string(word) + "'");
    next();
  }
  std::string expect_string(const char* what) {
    if (tok_.kind != Tok::string) error(std::string("expected ") + what + " (a quoted string)");
    std::string s = std::move(tok_.text);
    next();
    return s;
  }
  // A %name that defines a new value.
  std::string define_name() {
    if (tok_.kind != Tok::name) error("expected a value name (%name)");
    if (!defined_.insert(tok_.text).second) error("value defined twice");
    std::string s = tok_.text;
    next();
    return s;
  }
  // A %name that uses a value defined above.
  std::string use_name() {
    if (tok_.kind != Tok::name) error("expected a value reference (%name)");
    if (!defined_.contains(tok_.text)) error("reference to a value not defined above");
    std::string s = tok_.text;
    next();
    return s;
  }
  std::vector<int64_t> int_list(char open, char close) {
    expect_punct(open);
    std::vector<int64_t> v;
    while (!is_punct(close)) {
      if (!v.empty()) expect_punct(',');
      if (tok_.kind != Tok::integer) error("expected an integer");
      v.push_back(parse_int(tok_));
      next();
    }
    next();
    return v;
  }
  int64_t parse_int(const Token& t) const {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size()) fail_at(t, "integer out of range: " + t.text);
    return v;
  }
  DType dtype() {
    auto d = tok_.kind == Tok::ident ? dtype_from_short_name(tok_.text) : std::nullopt;
    if (!d) error("expected a dtype (f64 f32 f16 bf16 i64 i32 i16 i8 u8 b8)");
    next();
    return *d;
  }
  TensorType type() {
    TensorType t;
    t.dtype = dtype();
    Token at = tok_;
    t.shape = int_list('[', ']');
    t.strides = int_list('{', '}');
    if (t.shape.size() != t.strides.size())
      fail_at(at, "shape has " + std::to_string(t.shape.size()) + " dimensions but strides has " +
                      std::to_string(t.strides.size()));
    return t;
  }

  // ---- items -------------------------------------------------------------------
  Placeholder placeholder(PlaceholderKind kind) {
    Placeholder p;
    p.kind = kind;
    p.name = define_name();
    expect_punct(':');
    p.type = type();
    if (kind != PlaceholderKind::user_input) {
      expect_punct('=');
      p.target = expect_string("the state-dict name");
      if (tok_.kind == Tok::ident && tok_.text == "value" && peek_nonspace() == '=') {
        next();
        next();  // '='
        p.value_class = expect_string("a value class");
      }
    }
    return p;
  }

  Node node() {
    Node n;
    // `%name = op(...)` is a node without outputs; otherwise a list of `%v : type`.
    if (peek_nonspace() == '=') {
      n.name = define_name();
    } else {
      do {
        if (!n.outputs.empty()) expect_punct(',');
        Value v;
        v.name = define_name();
        expect_punct(':');
        if (tok_.kind == Tok::ident && tok_.text == "none") next();
        else v.type = type();
        n.outputs.push_back(std::move(v));
      } while (is_punct(','));
      n.name = node_name(n.outputs);
    }
    expect_punct('=');
    if (tok_.kind != Tok::ident) error("expected an op name (aten.<op>.<overload>)");
    n.op = tok_.text;
    next();
    expect_punct('(');
    while (!is_punct(')')) {
      if (!n.args.empty() || !n.kwargs.empty()) expect_punct(',');
      if (tok_.kind == Tok::ident && peek_nonspace() == '=') {
        std::string key = tok_.text;
        next();
        next();  // '='
        n.kwargs.emplace_back(std::move(key), value());
      } else {
        if (!n.kwargs.empty()) error("expected a keyword argument after keyword arguments");
        n.args.push_back(value());
      }
    }
    next();
    return n;
  }

  // The node of `%split.0, %split.1` is `split`; of a single `%mm` it is `mm`.
  static std::string node_name(const std::vector<Value>& outs) {
    const std::string& s = outs.front().name;
    size_t dot = s.rfind('.');
    bool indexed = dot != std::string::npos && dot + 1 < s.size() &&
                   s.find_first_not_of("0123456789", dot + 1) == std::string::npos;
    return indexed ? s.substr(0, dot) : s;
  }

  char peek_nonspace() const {
    size_t p = src_.find_first_not_of(" \t\r\n", pos_);
    return p == std::string_view::npos ? '\0' : src_[p];
  }

  Arg value() {
    Token t = tok_;
    switch (t.kind) {
      case Tok::name: return Ref{use_name()};
      case Tok::integer: next(); return parse_int(t);
      case Tok::floating: {
        next();
        if (t.text == "-inf") return -std::numeric_limits<double>::infinity();
        double v = 0;
        auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        if (ec != std::errc() || p != t.text.data() + t.text.size()) fail_at(t, "bad float: " + t.text);
        return v;
      }
      case Tok::string: next(); return t.text;
      case Tok::punct:
        if (t.text[0] == '[') {
          next();
          Arg::List list;
          while (!is_punct(']')) {
            if (!list.empty()) expect_punct(',');
            list.push_back(value());
          }
          next();
          return list;
        }
        break;
      case Tok::ident: {
        next();
        if (t.text == "true") return true;
        if (t.text == "false") return false;
        if (t.text == "none") return None{};
        if (t.text == "inf") return std::numeric_limits<double>::infinity();
        if (t.text == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (t.text == "dtype" || t.text == "device" || t.text == "layout" ||
            t.text == "memory_format") {
          expect_punct('(');
          Arg a = t.text == "dtype"    ? Arg(ScalarType{dtype()})
                  : t.text == "device" ? Arg(Device{expect_string("a device")})
                  : t.text == "layout" ? Arg(TorchLayout{expect_string("a layout")})
                                       : Arg(MemoryFormat{expect_string("a memory format")});
          expect_punct(')');
          return a;
        }
        error_at(t, "expected an argument value");
      }
      default: break;
    }
    error_at(t, "expected an argument value");
  }

  std::string_view src_, source_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  Token tok_;
  std::set<std::string, std::less<>> defined_;
};

}  // namespace

Graph parse_text(std::string_view text, std::string_view source) {
  check_nesting_depth(text, source);
  return Parser(text, source).parse_graph();
}

bool is_value_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), ident_char);
}

bool is_op_name(std::string_view op) {
  return !op.empty() && ident_start(op[0]) && std::all_of(op.begin(), op.end(), ident_char);
}

}  // namespace fact::graph
