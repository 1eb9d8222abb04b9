// The Family interface (docs/00-design.md §2): everything FACT knows about one kind of
// kernel, behind one class, so that the drivers — the rule registry, realize, compose, the
// report and `factc rules` — loop over the family list (family_list.cpp) and never test a
// rule or family name themselves. A family lives in src/families/<name>/.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "discover/rule.h"
#include "engine/build.h"
#include "engine/gpu_context.h"
#include "engine/harness.h"

namespace fact::families {

using realize::BuildRequest;
using realize::BuildResult;
using realize::CandidateOutcome;
using realize::GpuContext;
using realize::GpuInfo;

/// What realization plans under: the policy, the budget and the GPU (none: an H200's facts).
struct PlanContext {
  Precision policy = Precision::tf32;
  int tune_budget = 0;                // kernels built per pattern, best-ranked first; 0: all
  const std::optional<GpuInfo>* gpu;  // the probed GPU, or none
  int sm_count = 132;                 // gpu's SM count, else the H200's
};

/// What verification and tuning on the GPU get, for one pattern.
struct TuneContext {
  std::string id;                                 // the plan pattern's id (for progress lines)
  const std::map<std::string, BuildResult>* built;  // every kernel of the run, by name
  Precision policy = Precision::tf32;
  GpuContext* gpu = nullptr;
  int sm_count = 132;
  int warmup = 5, trials = 30;
  bool verbose = false;
};

/// What a family's tuning gives back: the outcome of every runnable candidate (vendor ones
/// included), the verification record (realized.json "verification") and the kernels that
/// could not run at all (built but quarantined, or not loadable), as realized.json candidates.
struct TuneResult {
  std::vector<CandidateOutcome> outcomes;
  nlohmann::json verification;
  nlohmann::json build_failures = nlohmann::json::array();
};

/// One plan pattern as its family realizes it: made by Family::plan before the build, asked
/// again on the GPU after it.
class PatternRealization {
 public:
  virtual ~PatternRealization() = default;

  std::vector<std::string> kernels;  // names of the kernels to build, in tuning order
  /// Generated kernels its candidates run besides `kernels` (a vendor GEMM's tail kernel):
  /// built with them, never tuned alone.
  std::vector<std::string> companions;
  std::string unsupported;           // non-empty: no FACT kernel implements it (vendor only)
  nlohmann::json fields = nlohmann::json::object();  // realized.json fields known before the build

  /// realized.json fields of its FACT-kernel candidate (impl "cutlass") named `candidate`
  /// (CandidateOutcome::kernel) beyond its outcome and build, read from the name's run-time options (candidate_kernel):
  /// the GEMM's "runtime" (split-K, raster, swizzle). Default: none (an empty object).
  virtual nlohmann::json candidate_fields(const std::string& /*candidate*/) const { return nlohmann::json::object(); }
  /// The problem the registry keys this pattern's tuning by (default: the plan's problem).
  virtual nlohmann::json tuning_problem(const nlohmann::json& plan_problem) const { return plan_problem; }
  /// Builds the runnable candidates (vendor first, then every kernel of `kernels` that
  /// built), verifies them against the float64 reference and times the survivors. Throws
  /// fact::Error only when the GPU itself fails.
  virtual TuneResult tune(const TuneContext& ctx) const = 0;
  /// The winner among `outcomes` (default: the fastest with status "ok"), or null.
  virtual const CandidateOutcome* winner(const std::vector<CandidateOutcome>& outcomes) const;
  /// realized.json's "fused" once a GPU chose a winner of `winner_impl` (json string or null):
  /// whether the kernel computes more of the graph than the pattern's own nodes. Default false.
  virtual bool fused(const nlohmann::json& /*winner_impl*/) const { return false; }
};

class Family {
 public:
  virtual ~Family() = default;

  /// The family's name: its rules' kernel_family, its problems' "kind" and the manifest's
  /// "abi" (the kernel C ABI its kernels export, src/families/<name>/abi.h).
  virtual std::string_view name() const = 0;

  // Discovery.
  /// The rules whose patterns this family realizes (rule_list.cpp registers them in family
  /// order); each has kernel_family == name().
  virtual std::vector<discover::Rule> rules() const = 0;
  /// Lines `factc rules` prints after every rule (what the family adds to its rules, e.g.
  /// the GEMM's epilogue ops and idioms). Default: nothing.
  virtual void describe(std::ostream&) const {}

  // Realization (src/engine/realize.cpp).
  /// Reads `pattern`'s problem (the one parser realize and compose share), picks the kernels
  /// of its tuning space under `ctx` and adds their sources to `requests` (by name, shared
  /// across patterns). Throws fact::Error for a problem that cannot be read: the pattern is
  /// then not realized at all.
  virtual std::unique_ptr<PatternRealization> plan(const nlohmann::json& pattern, const PlanContext& ctx,
                                                   std::map<std::string, BuildRequest>& requests) const = 0;

  // Composition (src/compose/).
  /// Checks that a pattern whose FACT kernel (`winner`, a realized.json candidate) won has
  /// what the runtime binds, and completes its manifest entry `m` (symbol, fused tail).
  /// Also called for a vendor winner that runs a companion kernel (its "companion"), to
  /// record in `m` how the runtime calls it. Throws fact::Error naming the pattern and what
  /// is missing.
  virtual void compose_winner(const std::string& id, const nlohmann::json& plan_pattern, const nlohmann::json& realized,
                              const nlohmann::json& winner, nlohmann::json& m) const = 0;

  // The report (src/compose/report.cpp).
  /// The problem column of the patterns table, e.g. "M=4096 N=4096 K=4096 L=1 float32 A:row B:row".
  virtual std::string problem_text(const nlohmann::json& problem) const = 0;
  /// Text after the patterns table when a manifest pattern is of this family ("" for none).
  virtual std::string table_note() const { return {}; }
  /// The family's own section of the report ("## ...\n\n..."), or "" when it has none for
  /// this run. `mine` is true when some manifest pattern is of this family.
  virtual std::string report_section(const nlohmann::json& plan, const nlohmann::json& realized,
                                     const nlohmann::json& manifest, bool mine) const = 0;
  /// "Left to ATen" lines of this family that are not whole patterns (e.g. unfused tails).
  virtual std::string left_to_aten(const nlohmann::json& /*plan*/, const nlohmann::json& /*manifest*/) const { return {}; }
  /// What a vendor-run pattern `m` (manifest entry) runs, e.g. "its ATen op (cuBLAS)".
  virtual std::string vendor_text(const nlohmann::json& m) const = 0;
};

/// The winner of a family whose vendor candidate is a timed lower bound of the ATen path
/// (attention, norm): the fastest verified FACT kernel ("ok", impl not "vendor"), else the
/// bound when it was timed ("ok"), else null.
const CandidateOutcome* fastest_kernel_else_bound(const std::vector<CandidateOutcome>& outcomes);

/// compose_winner's common end for a family whose kernels take no fused tail: throws
/// fact::Error when realized.json `r` fused one into pattern `id` or the winner `w` has no
/// object file to link; sets m["symbol"] (w's symbol, else its kernel name).
void compose_tailless_winner(std::string_view family, const std::string& id, const nlohmann::json& r,
                             const nlohmann::json& w, nlohmann::json& m);

/// The report section of a family whose vendor candidate is a copy bound
/// (engine/copy_bound.h: norm, rope): "\n## <title>\n\n" and one line per manifest pattern
/// of `family` — its problem (`text`), then the kernel that replaces its nodes (and its time)
/// or why it was left to ATen (realized.json's `cutlass_unavailable`, else no verified kernel).
std::string copy_bound_report_section(std::string_view family, std::string_view title, const nlohmann::json& realized,
                                      const nlohmann::json& manifest,
                                      std::string (*text)(const nlohmann::json& problem));

/// The table note of such a family: its vendor ms is a lower bound of the ATen nodes.
std::string copy_bound_table_note(std::string_view family);

/// Every family FACT ships, in the order of family_list.cpp (the order their rules run and
/// their report sections appear). Throws fact::Error at first use on a duplicate name.
const std::vector<const Family*>& families();

/// The family called `name`, or nullptr.
const Family* find_family(std::string_view name);

/// The family of a plan pattern: the kernel_family of its rule when the rule is registered,
/// else the family its problem's "kind" names; nullptr when neither names one.
const Family* family_of_pattern(const nlohmann::json& pattern);

/// The family a problem's "kind" names, or nullptr (also for a non-object).
const Family* family_of_problem(const nlohmann::json& problem);

}  // namespace fact::families
