"""How much GPU memory a job of SkyRL's JAX engine needs, estimated before launch.

SkyRL's ``JaxBackend`` (skyrl/backends/jax.py, skyrl/tx/) holds, in the model's dtype:
the base weights; every LoRA'd linear's ``lora_A``/``lora_B`` for each of ``max_lora_adapters``
slots (attention qkv and o, the MLP's gate_up and down, the embedding, an untied lm_head), with
as many again for the accumulated gradients; and, in float32 whatever the model's dtype
(training/optimizer.py), twice as many for AdamW's moments (``nnx.Optimizer(wrt=is_lora_param)``).
Its peak is then the larger of

- training: one ``forward_backward`` micro batch of ``micro_batch`` sequences padded to
  ``round_up_seq_len`` tokens; its layers run in a ``lax.scan`` whose residuals the backward keeps
  (every layer's, or only each layer's input with ``gradient_checkpointing``), and the logits of
  every token (the chunked loss is a ``lax.map``, whose backward keeps each chunk's logits too);
- sampling: the KV cache of ``sample_max_num_sequences`` sequences of prompt + response tokens.

The activations a layer keeps per token are counted from the layer's code (below); XLA holds
more than that at the backward's peak (its working buffers, float32 temporaries, LoRA's sorted
copies), a factor fitted to the H200 runs of docs/BENCHMARKS.md (ACTIVATION_FACTOR), raised on a
machine where a job saw more (training/memory_fit.py). It is an estimate: the sizes left to auto
are fitted to it with a margin, a number set over it is warned about, and only a job that fits at
no size is refused before launch (sweep/memory_check.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from rllm_sweeps.records.memory import GIB, MemoryNeed

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
OPTIMIZER_STATE_BYTES = 4  # AdamW's moments are float32 (training/optimizer.py)

# What XLA keeps live at the backward's peak, against the activations counted per layer. Measured on
# one H200 (0.44 B Qwen3, LoRA r32, 64 + 128 tokens, docs/BENCHMARKS.md): micro batch 64 fits in 0.75
# of the GPU (105 GiB) but not in 0.45 (63 GiB), 128 not in 0.75, 16 and 32 fit. Every factor in
# (2.0, 3.4) says so; 2.5 is near the middle.
ACTIVATION_FACTOR = 2.5


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a Qwen3/Llama-like decoder, as its Hugging Face config.json gives them."""

    vocab: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    tied_embeddings: bool
    dtype_bytes: int

    @classmethod
    def from_hf_config(cls, config: dict) -> ModelShape:
        heads = int(config["num_attention_heads"])
        dtype = str(config.get("dtype") or config.get("torch_dtype") or "float32").removeprefix("torch.")
        return cls(
            vocab=int(config["vocab_size"]),
            hidden=int(config["hidden_size"]),
            intermediate=int(config["intermediate_size"]),
            layers=int(config["num_hidden_layers"]),
            heads=heads,
            kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or int(config["hidden_size"]) // heads),
            tied_embeddings=bool(config.get("tie_word_embeddings", False)),
            dtype_bytes=DTYPE_BYTES.get(dtype, 4),
        )

    @property
    def q_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    def parameters(self) -> int:
        h, q, kv, i = self.hidden, self.q_width, self.kv_width, self.intermediate
        layer = h * (q + 2 * kv) + q * h + 3 * h * i + 2 * h + 2 * self.head_dim  # + its norms
        head = 0 if self.tied_embeddings else h * self.vocab
        return self.layers * layer + self.vocab * h + head + h

    def lora_parameters(self, rank: int) -> int:
        """One adapter's lora_A + lora_B over every LoRA'd layer (qwen3.py: qkv, o, gate_up, down,
        the embedding, an untied lm_head)."""
        h, q, kv, i = self.hidden, self.q_width, self.kv_width, self.intermediate
        per_layer = (h + q + 2 * kv) + (q + h) + (h + 2 * i) + (i + h)
        head = 0 if self.tied_embeddings else h + self.vocab
        return rank * (self.layers * per_layer + self.vocab + h + head)

    def activations_per_token_layer(self) -> int:
        """Elements one decoder layer keeps per token for its backward (qwen3.py's forward, LoRA's
        routing copies included): hidden-sized (residual, two norms, LoRA's sorted inputs and
        outputs), attention (qkv and its LoRA output, q/k norms and RoPE, the attention output and
        o_proj's sorted input), MLP (gate_up and its LoRA output, silu, the product, down's input)."""
        h, q, kv, i = self.hidden, self.q_width, self.kv_width, self.intermediate
        return 8 * h + 2 * (q + 2 * kv) + 2 * (q + kv) + 2 * q + 7 * i


@dataclass(frozen=True)
class RunShape:
    """What a job asks of the engine (its config: skyrl.jax.*, data.*, model.lora.*)."""

    micro_batch: int  # sequences per forward_backward (skyrl.jax.train_micro_batch_size, as resolved)
    train_tokens: int  # tokens a trained sequence is padded to (SkyRL's round_up_seq_len)
    sample_sequences: int  # skyrl.jax.sample_max_num_sequences, as resolved
    sample_tokens: int  # prompt + response tokens of a sampled sequence (padded as SkyRL pads them)
    lora_rank: int
    lora_adapters: int  # slots SkyRL allocates (skyrl.jax.max_lora_adapters)
    gradient_checkpointing: bool = False


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes, by what holds them."""

    weights: int
    lora_state: int  # adapters' parameters, accumulated gradients, AdamW's two (float32) moments
    training: int  # a micro batch's activations and logits
    sampling: int  # the sampler's KV cache and last logits

    @property
    def total(self) -> int:
        return self.weights + self.lora_state + max(self.training, self.sampling)

    @property
    def gib(self) -> float:
        return self.total / GIB


def memory_need(model: ModelShape, run: RunShape, activation_factor: float = ACTIVATION_FACTOR) -> MemoryNeed:
    """The estimate of a job of SkyRL's JAX engine (per GPU of a single-GPU job), by size."""
    b = model.dtype_bytes
    per_layer = model.activations_per_token_layer() * b
    if run.gradient_checkpointing:  # each layer's input, and one layer recomputed at a time
        activations, kept_inputs = per_layer, model.layers * model.hidden * b
    else:
        activations, kept_inputs = model.layers * per_layer, 0
    logits = model.vocab * (b + 4)  # the logits, and their float32 log-softmax
    weights = model.parameters() * b
    lora = run.lora_adapters * model.lora_parameters(run.lora_rank) * (2 * b + 2 * OPTIMIZER_STATE_BYTES)
    return MemoryNeed(
        weights=weights,
        lora_state=lora,
        activations_per_sequence=run.train_tokens * activations,
        other_per_sequence=run.train_tokens * (kept_inputs + logits),
        sample_per_sequence=run.sample_tokens * model.layers * 2 * model.kv_width * b + model.vocab * 4,
        micro_batch=run.micro_batch,
        sample_sequences=run.sample_sequences,
        activation_factor=activation_factor,
    )


def estimate_jax_memory(model: ModelShape, run: RunShape) -> MemoryEstimate:
    """The peak GPU memory of a job of SkyRL's JAX engine (per GPU of a single-GPU job)."""
    need = memory_need(model, run)
    return MemoryEstimate(
        weights=need.weights,
        lora_state=need.lora_state,
        training=need.training_bytes(run.micro_batch),
        sampling=need.sampling_bytes(run.sample_sequences),
    )


__all__ = [
    "ACTIVATION_FACTOR",
    "GIB",
    "MemoryEstimate",
    "ModelShape",
    "RunShape",
    "estimate_jax_memory",
    "memory_need",
]
