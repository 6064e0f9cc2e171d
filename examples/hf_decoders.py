"""Tiny one-layer Hugging Face decoders of every architecture ``commsim run --model hf:DIR`` folds (Qwen2, Mistral,
Phi-3, Gemma, GPT-NeoX, GPT-J, Llama), written by ``save_pretrained`` to a local directory -- no download.  Run
from the repository root::

    python -m examples.hf_decoders qwen2 /tmp/tiny-qwen2        # writes a tiny Qwen2ForCausalLM
    commsim run index-idxl --model hf:/tmp/tiny-qwen2 --n 4
    python -m examples.hf_decoders qwen2 /tmp/q1 vocab_size=130,hidden=1,heads=1,kv_heads=1,head_dim=2,seq_len=129

Needs torch and transformers (``pip install 'commsim[torch,hf]'``).
"""
from __future__ import annotations

import sys

import torch

#: model_type -> (the transformers config and model classes, the config's extra settings)
ARCHITECTURES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": None}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                                   "partial_rotary_factor": 0.5}}),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {"hidden_activation": "gelu_pytorch_tanh"}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {"rotary_pct": 0.5, "use_parallel_residual": True}),
    "gptj": ("GPTJConfig", "GPTJForCausalLM", {"rotary_dim": 2}),
}


def tiny_decoder(model_type: str, vocab_size: int = 32, hidden: int = 16, heads: int = 4, kv_heads: int = 2,
                 layers: int = 1, seq_len: int = 32, seed: int = 0, init: float = 0.5, **extra):
    """A tiny random ``...ForCausalLM`` of ``model_type`` (one of :data:`ARCHITECTURES`): ``hidden`` wide, ``heads``
    query heads of width hidden / heads (``kv_heads`` key/value heads where the architecture has grouped-query
    attention), ``init`` the weights' standard deviation (large enough that attention and MLP matter); ``extra``
    config settings override the architecture's."""
    import transformers
    config_cls, model_cls, settings = ARCHITECTURES[model_type]
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab_size, num_hidden_layers=layers, num_attention_heads=heads,
                  hidden_size=hidden, intermediate_size=2 * hidden, max_position_embeddings=seq_len,
                  initializer_range=init, pad_token_id=0, bos_token_id=0, eos_token_id=0)
    if model_type == "gptj":
        common = dict(vocab_size=vocab_size, n_layer=layers, n_head=heads, n_embd=hidden, n_inner=2 * hidden,
                      n_positions=seq_len, initializer_range=init, pad_token_id=0, bos_token_id=0, eos_token_id=0)
    elif model_type != "gpt_neox":
        common.update(num_key_value_heads=kv_heads, head_dim=hidden // heads)
    config = getattr(transformers, config_cls)(**{**common, **settings, **extra})
    model = getattr(transformers, model_cls)(config).eval()
    with torch.no_grad():            # biases and norm weights away from their zero/one initialisation
        gen = torch.Generator().manual_seed(seed + 1)
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name or name.startswith(("ln", "transformer.ln")) or ".ln_" in name:
                p.add_(0.1 * torch.randn(p.shape, generator=gen))
    return model


def save_tiny_decoder(model_type: str, directory: str, **sizes) -> str:
    """A :func:`tiny_decoder` written by ``save_pretrained`` to ``directory``."""
    tiny_decoder(model_type, **sizes).save_pretrained(directory)
    return directory


def _settings(text: str) -> dict:
    """``key=value,...`` of integer settings (``hidden=1,heads=1``)."""
    pairs = [item.partition("=") for item in text.split(",") if item]
    if any(not eq or not value.lstrip("-").isdigit() for _, eq, value in pairs):
        sys.exit(f"settings must be key=integer,...; got {text!r}")
    return {key: int(value) for key, _, value in pairs}


if __name__ == "__main__":   # python -m examples.hf_decoders MODEL_TYPE DIR [key=value,...]
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in ARCHITECTURES:
        sys.exit(f"usage: python -m examples.hf_decoders {{{','.join(ARCHITECTURES)}}} DIR [key=value,...]")
    print(save_tiny_decoder(sys.argv[1], sys.argv[2], **_settings(sys.argv[3] if len(sys.argv) == 4 else "")))
