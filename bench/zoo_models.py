"""The models of bench/zoo.py, built from their libraries' configs with random weights
(``torch.manual_seed(0)``; nothing downloaded).

Each model is a module whose forward takes tensors and returns one tensor: the
``transformers`` models are wrapped in :class:`LastHidden` (sdpa attention, no cache, the
last hidden state), the ``torchvision`` models return their logits. ``transformers`` and
``torchvision`` are imported by the builders that need them, so this module imports without
either.

    model, inputs, family = build("gpt2", batch=2, seq=16, layers=1)
    out = model(*inputs.values())
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Callable

import torch

__all__ = ["MODELS", "Spec", "LastHidden", "build"]


@dataclasses.dataclass(frozen=True)
class Spec:
    """A model of the zoo and its default sizes.

    Attributes:
        family: decoder, encoder, encoder-decoder, vision transformer or convnet.
        batch: the batch size.
        seq: tokens per sequence (text models; T5's decoder gets ``seq // 4``) or the
            image side in pixels (vision models).
        layers: transformer layers (``None``: a convnet, whose depth is its own).
    """

    family: str
    batch: int
    seq: int
    layers: int | None


MODELS: dict[str, Spec] = {
    "gpt2": Spec("decoder", 8, 1024, 12),
    "llama": Spec("decoder", 4, 1024, 8),
    "qwen2": Spec("decoder", 4, 1024, 6),
    "bert": Spec("encoder", 32, 512, 12),
    "t5": Spec("encoder-decoder", 16, 512, 12),
    "vit": Spec("vision transformer", 64, 224, 12),
    "resnet50": Spec("convnet", 64, 224, None),
    "convnext": Spec("convnet", 64, 224, None),
}


class LastHidden(torch.nn.Module):
    """A ``transformers`` model called with its named tensor inputs and ``use_cache=False``,
    returning ``last_hidden_state``.

    Attributes:
        names: the model's keyword for each positional input of :meth:`forward`.
    """

    def __init__(self, model: torch.nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, tensors)), use_cache=False).last_hidden_state


def _tokens(vocab: int, batch: int, seq: int) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq))


def _hf(cls_name: str, config) -> torch.nn.Module:
    import transformers
    with warnings.catch_warnings():  # config and init notices of a model built from scratch
        warnings.simplefilter("ignore")
        return getattr(transformers, cls_name)(config)


def _gpt2(batch: int, seq: int, layers: int):
    import transformers
    config = transformers.GPT2Config(n_layer=layers, attn_implementation="sdpa")
    return (LastHidden(_hf("GPT2Model", config), ("input_ids",)),
            {"input_ids": _tokens(config.vocab_size, batch, seq)})


def _decoder(cls: str, config_cls: str, batch: int, seq: int, layers: int, **sizes):
    import transformers
    config = getattr(transformers, config_cls)(num_hidden_layers=layers,
                                               attn_implementation="sdpa", **sizes)
    return (LastHidden(_hf(cls, config), ("input_ids",)),
            {"input_ids": _tokens(config.vocab_size, batch, seq)})


def _llama(batch: int, seq: int, layers: int):
    return _decoder("LlamaModel", "LlamaConfig", batch, seq, layers, hidden_size=2048,
                    intermediate_size=5632, num_attention_heads=16, num_key_value_heads=4,
                    vocab_size=32000, max_position_embeddings=4096)


def _qwen2(batch: int, seq: int, layers: int):
    return _decoder("Qwen2Model", "Qwen2Config", batch, seq, layers, hidden_size=1536,
                    intermediate_size=8960, num_attention_heads=12, num_key_value_heads=2)


def _bert(batch: int, seq: int, layers: int):
    import transformers
    config = transformers.BertConfig(num_hidden_layers=layers, attn_implementation="sdpa")
    return (LastHidden(_hf("BertModel", config), ("input_ids",)),
            {"input_ids": _tokens(config.vocab_size, batch, seq)})


def _t5(batch: int, seq: int, layers: int):
    import transformers
    config = transformers.T5Config(vocab_size=32128, d_model=768, d_ff=3072, d_kv=64,
                                   num_heads=12, num_layers=layers, num_decoder_layers=layers,
                                   attn_implementation="sdpa")
    return (LastHidden(_hf("T5Model", config), ("input_ids", "decoder_input_ids")),
            {"input_ids": _tokens(config.vocab_size, batch, seq),
             "decoder_input_ids": _tokens(config.vocab_size, batch, max(seq // 4, 1))})


def _vit(batch: int, seq: int, layers: int):
    import torchvision
    model = torchvision.models.vit_b_16(weights=None, image_size=seq)
    model.encoder.layers = model.encoder.layers[:layers]  # vit_b_16 has 12
    return model, {"images": torch.randn(batch, 3, seq, seq)}


def _convnet(name: str) -> Callable:
    def builder(batch: int, seq: int, layers: None):
        import torchvision
        model = getattr(torchvision.models, name)(weights=None)
        return model, {"images": torch.randn(batch, 3, seq, seq)}
    return builder


_BUILDERS: dict[str, Callable] = {
    "gpt2": _gpt2, "llama": _llama, "qwen2": _qwen2, "bert": _bert, "t5": _t5, "vit": _vit,
    "resnet50": _convnet("resnet50"), "convnext": _convnet("convnext_tiny"),
}


def build(name: str, batch: int | None = None, seq: int | None = None,
          layers: int | None = None, device: torch.device | str = "cpu"
          ) -> tuple[torch.nn.Module, dict[str, torch.Tensor], str]:
    """Model ``name`` of :data:`MODELS` in eval mode (float32), built on ``device``, with
    random inputs for it there.

    Args:
        batch, seq, layers: overrides of the model's :class:`Spec` sizes (``seq``: tokens,
            or the image side).

    Returns:
        ``(model, inputs, family)``: ``inputs`` maps each input's name to its tensor, in the
        order ``model`` takes them positionally.

    Raises:
        KeyError: no such model.
        ValueError: ``layers`` for a convnet.
    """
    spec = MODELS[name]
    if layers is not None and spec.layers is None:
        raise ValueError(f"{name} is a convnet: its depth is its own (no layers override)")
    torch.manual_seed(0)
    with torch.device(device):
        model, inputs = _BUILDERS[name](batch or spec.batch, seq or spec.seq,
                                        layers or spec.layers)
    return model.eval(), inputs, spec.family
