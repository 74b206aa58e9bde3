"""BERT encoders from Hugging Face files: `config.json` read and checked, the weights file's tensors mapped to
parameters, and a Scellis program built around them from catalog ops.

Expects a BERT `config.json` (model_type bert: absolute positions, GELU or its tanh form) and the tensor
file it came with, read by scellis.models.safetensors (the keys of BertModel, with or without the `bert.`
prefix a task model adds). Guarantees: `BertConfig.read` returns the architecture or raises ModelError
naming the field; `bert_tensors` maps every parameter the encoder needs to its key, or raises ModelError
naming the first key that is missing, of another dtype than float32, or of another shape than the config
implies; `sentence_classifier` returns program JSON whose pretrained nodes read exactly those keys
(`pretrained_linear` nodes and `parameter` nodes of init `pretrained`, the file pinned by its SHA-256),
wired as sentence-transformers runs
the model: embeddings, post-norm layers of masked multi-head self-attention and a GELU feed-forward,
mean pooling over the tokens the mask keeps, L2 normalisation; then a linear head, cross-entropy and
accuracy. The program's features are int32 [2, length]: token ids, then the attention mask (1: a token,
0: padding), as scellis.text.WordPiece encodes them. With `Lora` settings, the pretrained weights are
frozen and the chosen linears of every layer get adapters (scellis.models.lora reads and merges them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scellis.graph import Program, Ref
from scellis.graph.adapters import Adapters, adapted
from scellis.graph.validate import Weights
from scellis.models.safetensors import TensorFile

ACTIVATIONS = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}  # -> the gelu node's form
MASKED = -10000.0  # added to the attention scores of padding: softmax gives them exactly 0
NORM_EPS = 1e-12  # L2 normalisation's floor on the norm (torch.nn.functional.normalize's)
POOL_EPS = 1e-9  # mean pooling's floor on the token count (sentence-transformers')


class ModelError(ValueError):
    """A model's files that cannot be mapped; the message names the field or the tensor."""


@dataclass(frozen=True)
class BertConfig:
    vocab: int
    hidden: int
    layers: int
    heads: int
    intermediate: int
    positions: int
    token_types: int
    eps: float
    gelu: str  # "none" (erf) or "tanh"
    hidden_dropout: float
    attention_dropout: float

    @classmethod
    def read(cls, data: Any, name: str = "config.json") -> BertConfig:
        if not isinstance(data, dict):
            raise ModelError(f"{name}: a model config is a JSON object, got {type(data).__name__}")
        if data.get("model_type") != "bert":
            raise ModelError(f"{name}: model_type is {data.get('model_type')!r}; only 'bert' models are read")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ModelError(f"{name}: position_embedding_type {data['position_embedding_type']!r} is not read "
                             "(only 'absolute')")  # fmt: skip
        act = data.get("hidden_act")
        if act not in ACTIVATIONS:
            raise ModelError(f"{name}: hidden_act {act!r} is none of {', '.join(ACTIVATIONS)}")

        def size(key: str) -> int:
            value = data.get(key)
            if not (isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 2**31 - 1):
                raise ModelError(f"{name}: {key} must be a positive integer, got {value!r}")
            return value

        def share(key: str, default: float) -> float:
            value = data.get(key, default)
            if not (isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1):
                raise ModelError(f"{name}: {key} must be a number in [0, 1), got {value!r}")
            return float(value)

        config = cls(
            size("vocab_size"), size("hidden_size"), size("num_hidden_layers"), size("num_attention_heads"),
            size("intermediate_size"), size("max_position_embeddings"), size("type_vocab_size"),
            float(data.get("layer_norm_eps", 1e-12)), ACTIVATIONS[act],
            share("hidden_dropout_prob", 0.1), share("attention_probs_dropout_prob", 0.1),
        )  # fmt: skip
        if config.hidden % config.heads:
            raise ModelError(f"{name}: num_attention_heads {config.heads} does not divide hidden_size {config.hidden}")
        if not (isinstance(config.eps, float) and 0 < config.eps < 1):
            raise ModelError(f"{name}: layer_norm_eps must lie in (0, 1), got {config.eps!r}")
        return config


def layer_tensors(config: BertConfig, layer: int) -> dict[str, tuple[int, ...]]:
    """Layer `layer`'s tensors (BertModel's keys) and their shapes."""
    h, i, at = config.hidden, config.intermediate, f"encoder.layer.{layer}."
    return {
        **{f"{at}attention.self.{part}.weight": (h, h) for part in ("query", "key", "value")},
        **{f"{at}attention.self.{part}.bias": (h,) for part in ("query", "key", "value")},
        f"{at}attention.output.dense.weight": (h, h),
        f"{at}attention.output.dense.bias": (h,),
        f"{at}attention.output.LayerNorm.weight": (h,),
        f"{at}attention.output.LayerNorm.bias": (h,),
        f"{at}intermediate.dense.weight": (i, h),
        f"{at}intermediate.dense.bias": (i,),
        f"{at}output.dense.weight": (h, i),
        f"{at}output.dense.bias": (h,),
        f"{at}output.LayerNorm.weight": (h,),
        f"{at}output.LayerNorm.bias": (h,),
    }


def encoder_tensors(config: BertConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor the encoder reads (BertModel's keys), with its shape."""
    h = config.hidden
    out = {
        "embeddings.word_embeddings.weight": (config.vocab, h),
        "embeddings.position_embeddings.weight": (config.positions, h),
        "embeddings.token_type_embeddings.weight": (config.token_types, h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
    }
    for layer in range(config.layers):
        out.update(layer_tensors(config, layer))
    return out


def bert_tensors(config: BertConfig, file: TensorFile, name: str = "model.safetensors") -> dict[str, str]:
    """Each tensor the encoder reads -> its key in `file` (see the module's contract)."""
    prefix = next((p for p in ("", "bert.") if f"{p}embeddings.word_embeddings.weight" in file.tensors), None)
    if prefix is None:
        raise ModelError(f"{name} holds no 'embeddings.word_embeddings.weight' (nor 'bert.…'): is it a BERT model?")
    keys = {}
    for key, shape in encoder_tensors(config).items():
        tensor = file.tensors.get(prefix + key)
        if tensor is None:
            raise ModelError(f"{name} lacks the tensor {prefix + key!r}, which the config's encoder reads")
        if tensor.dtype != "F32":
            raise ModelError(f"{name}: tensor {prefix + key!r} is {tensor.dtype}; only F32 weights are read")
        if tensor.shape != shape:
            raise ModelError(f"{name}: tensor {prefix + key!r} has shape {list(tensor.shape)}, the config implies "
                             f"{list(shape)}")  # fmt: skip
        keys[key] = prefix + key
    return keys


LORA_TARGETS = {  # a target's name (PEFT's target_modules) -> the layer's linears it names
    "query": ("attention.self.query",),
    "key": ("attention.self.key",),
    "value": ("attention.self.value",),
    "dense": ("attention.output.dense", "intermediate.dense", "output.dense"),
}


@dataclass(frozen=True)
class Lora:
    """Low-rank adapters on the chosen linears of every layer, the pretrained weights frozen: y = x W^T + b +
    (alpha / rank) * dropout(x) A^T B^T, with A [rank, in] uniform in +-1/sqrt(in) from the `init` substream
    (PEFT's kaiming-uniform default) and B [out, rank] zeros, so training starts from the pretrained model."""

    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.1
    targets: tuple[str, ...] = ("query", "value")

    def __post_init__(self) -> None:
        unknown = [t for t in self.targets if t not in LORA_TARGETS]
        if unknown or not self.targets:
            raise ModelError(f"LoRA targets {list(self.targets)}: each is one of {', '.join(LORA_TARGETS)}")
        try:
            self.adapters()
        except ValueError as error:
            raise ModelError(str(error)) from None

    def adapters(self, nf4: bool = False) -> Adapters:
        """The change that puts these adapters on a program's linears (scellis.graph.adapters)."""
        modules = tuple(m for t in self.targets for m in LORA_TARGETS[t])
        return Adapters(self.rank, self.alpha, self.dropout, modules, nf4)


@dataclass(frozen=True)
class Classifier:
    """What `sentence_classifier` builds besides the encoder."""

    classes: int = 2
    length: int = 128  # tokens a text is cut or padded to
    batch: int = 32
    epochs: int = 3
    lr: float = 1e-4
    train_encoder: bool = True  # false: the pretrained weights are frozen (so with LoRA: only adapters learn)
    lora: Lora | None = None  # adapters on the frozen encoder (train_encoder is then ignored)
    nf4: bool = False  # QLoRA: the encoder's linear weights kept as NF4 words (frozen; needs lora)

    def __post_init__(self) -> None:
        if self.nf4 and self.lora is None:
            raise ModelError("an NF4 base is frozen: it trains through LoRA adapters (give lora settings)")


def sentence_classifier(
    config: BertConfig, keys: dict[str, str], weights: Weights, settings: Classifier = Classifier()
) -> dict[str, Any]:
    """The program JSON (see the module's contract); node ids name the layer they belong to."""
    if not 1 <= settings.length <= config.positions:
        raise ModelError(f"length {settings.length} must lie in 1..{config.positions} (the model's positions)")
    if settings.classes < 2:
        raise ModelError(f"a classifier needs two classes or more, got {settings.classes}")
    p = Program("sentence-classifier")
    p.set_weights(weights.file, weights.sha256, weights.bytes)
    tokens = p.input("tokens", [2, settings.length], dtype="int32")
    labels = p.input("label", [], dtype="int32", role="labels")
    trainable = settings.train_encoder and settings.lora is None
    embedding = Encoder(p, config, keys, settings.length, trainable).embedding(tokens)
    logits = p.linear(embedding, settings.classes, id="head")
    p.set_loss(p.cross_entropy(logits, labels, id="loss"))
    p.add_metric(p.accuracy(logits, labels, id="accuracy"))
    p.set_optimizer("adamw", lr=settings.lr, weight_decay=0.01)
    p.set_loop(epochs=settings.epochs, batch_size=settings.batch)
    if settings.lora is None:
        return p.to_json()
    return adapted(p.to_json(), settings.lora.adapters(settings.nf4))


@dataclass(frozen=True)
class Encoder:
    """Adds the encoder's nodes to a program, reading the pretrained tensors `keys` names."""

    p: Program
    config: BertConfig
    keys: dict[str, str]
    length: int
    trainable: bool

    def weight(self, key: str, shape: tuple[int, ...], node: str) -> Ref:
        tensor = self.keys[key]
        return self.p.parameter(list(shape), init="pretrained", tensor=tensor, trainable=self.trainable, id=node)

    def dense(self, x: Ref, key: str, shape: tuple[int, int], node: str) -> Ref:
        """x @ W^T + b for a torch Linear's W [out, in] and b [out], as the file holds them: node
        `<node>-linear` (a pretrained_linear), then `<node>` adding the bias."""
        p = self.p
        y = p.pretrained_linear(x, shape[0], self.keys[f"{key}.weight"], "float32", self.trainable, id=f"{node}-linear")
        return p.add(y, self.weight(f"{key}.bias", shape[:1], f"{node}-b"), id=node)

    def norm(self, x: Ref, key: str, node: str) -> Ref:
        p, h = self.p, (self.config.hidden,)
        x = p.layer_norm(x, eps=self.config.eps, affine=False, id=f"{node}-n")
        x = p.mul(x, self.weight(f"{key}.weight", h, f"{node}-g"), id=f"{node}-s")
        return p.add(x, self.weight(f"{key}.bias", h, f"{node}-b"), id=node)

    def embedding(self, tokens: Ref) -> Ref:
        """The sentence embedding of `tokens` (int32 [2, length]: ids, mask): node `embedding`, [hidden]."""
        p, c, n = self.p, self.config, self.length
        h = c.hidden
        ids = p.reshape(p.slice(tokens, [0, 0], [1, n], id="ids-row"), [n], id="ids")
        mask = p.float(p.reshape(p.slice(tokens, [1, 0], [2, n], id="mask-row"), [n], id="mask-int"), id="mask")
        table = self.weight("embeddings.word_embeddings.weight", (c.vocab, h), "words-table")
        positions = self.weight("embeddings.position_embeddings.weight", (c.positions, h), "positions-table")
        types = self.weight("embeddings.token_type_embeddings.weight", (c.token_types, h), "types-table")
        x = p.add(p.gather(table, ids, id="words"), p.slice(positions, [0, 0], [n, h], id="positions"), id="words-at")
        x = p.add(x, p.slice(types, [0, 0], [1, h], id="type0"), id="embedded")  # one segment: type 0 throughout
        x = p.dropout(self.norm(x, "embeddings.LayerNorm", "embeddings-norm"), c.hidden_dropout, id="embeddings")
        unmasked = p.reshape(p.sub(mask, p.constant(1.0), id="unmasked"), [1, 1, n], id="mask-rows")
        bias = p.mul(unmasked, p.constant(-MASKED), id="mask-bias")  # 0 for tokens, MASKED for padding
        for layer in range(c.layers):
            x = self.layer(x, bias, layer)
        kept = p.reshape(mask, [n, 1], id="pool-mask")
        total = p.sum(p.mul(x, kept, id="pool-kept"), axes=[1], id="pool-sum")
        count = p.maximum(p.sum(kept, axes=[1], id="pool-count"), p.constant(POOL_EPS), id="pool-floor")
        pooled = p.div(total, count, id="pooled")
        square = p.sum(p.mul(pooled, pooled, id="squares"), axes=[-1], keepdims=True, id="square-norm")
        scale = p.rsqrt(p.maximum(square, p.constant(NORM_EPS * NORM_EPS), id="norm-floor"), id="inverse-norm")
        return p.mul(pooled, scale, id="embedding")

    def layer(self, x: Ref, bias: Ref, layer: int) -> Ref:
        """One post-norm BERT layer: masked multi-head self-attention, then the GELU feed-forward."""
        p, c, n = self.p, self.config, self.length
        h, i, heads = c.hidden, c.intermediate, c.heads
        width, at, key = h // heads, f"layer{layer}", f"encoder.layer.{layer}"

        def split(v: Ref, part: str) -> Ref:  # [length, hidden] -> [heads, length, width]
            v = p.reshape(v, [n, heads, width], id=f"{at}-{part}-heads")
            return p.permute(v, [1, 0, 2], id=f"{at}-{part}-split")

        q, k, v = (
            split(self.dense(x, f"{key}.attention.self.{part}", (h, h), f"{at}-{part}"), part)
            for part in ("query", "key", "value")
        )
        scores = p.mul(p.matmul(q, k, transpose_b=True, id=f"{at}-qk"), p.constant(1 / math.sqrt(width)),
                       id=f"{at}-scores")  # fmt: skip
        probs = p.softmax(p.add(scores, bias, id=f"{at}-masked"), -1, id=f"{at}-attention")
        probs = p.dropout(probs, c.attention_dropout, id=f"{at}-attention-drop")
        attended = p.permute(p.matmul(probs, v, id=f"{at}-attended"), [1, 0, 2], id=f"{at}-merge")
        attended = p.reshape(attended, [n, h], id=f"{at}-merged")
        out = self.dense(attended, f"{key}.attention.output.dense", (h, h), f"{at}-output")
        out = p.dropout(out, c.hidden_dropout, id=f"{at}-output-drop")
        x = self.norm(p.add(x, out, id=f"{at}-residual1"), f"{key}.attention.output.LayerNorm", f"{at}-norm1")
        inner = p.gelu(self.dense(x, f"{key}.intermediate.dense", (i, h), f"{at}-expand"), c.gelu, id=f"{at}-gelu")
        out = self.dense(inner, f"{key}.output.dense", (h, i), f"{at}-contract")
        out = p.dropout(out, c.hidden_dropout, id=f"{at}-contract-drop")
        return self.norm(p.add(x, out, id=f"{at}-residual2"), f"{key}.output.LayerNorm", f"{at}-norm2")
