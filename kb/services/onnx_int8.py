"""The int8 query variant of the exported MiniLM (``KB_ONNX_QUERY_INT8``): outlier input
channels float, the rest int8.

Each dense MatMul of the encoder and each QKV projection (x times a constant K-by-N weight;
the fused Attention node becomes that product and MultiHeadAttention) is split along K: the input
channels with the largest activations (their peak over ``CALIBRATION``, a few generic texts,
times the largest magnitude in their weight row) stay a float MatMul, the rest go through ONNX
Runtime's ``DynamicQuantizeMatMul`` (int8 weights with one scale per output column, the input
quantised per tensor at run time), and the two partial products are added. Taking the outliers
out keeps the run-time input scale small: with them in (the first recipe, ``quantize_dynamic``)
the worst cosine to the float model was 0.987.

The channels are reordered so the float ones come first and one ``Split`` cuts the input (a
``Gather`` of the channels costs more than the int8 product saves); the reordering is folded
into the weights, so it costs nothing at run time:

* the hidden (residual) stream gets one order for all layers, folded into the embedding tables,
  every layer-norm weight and bias, the QKV projections' rows, the dense layers' columns, and
  undone on the 384 values of the sentence embedding by one ``Gather`` at the end;
* the FFN's intermediate channels get an order per layer, folded into the first FFN MatMul's
  columns and the GELU bias;
* the attention output's channels can only move a head at a time (the Q, K and V columns of
  a head together), so its float part is the head holding the largest channels.
"""

from __future__ import annotations

from pathlib import Path

HEADS, HEAD_SIZE = 12, 32
# Input channels kept float per MatMul, by its K (the rest int8): the attention output's float
# part is one whole head. Measured (README "Numbers, fifth round"): 96/192 were 12 % slower for
# a worst cosine of 0.9996 instead of 0.9994; 8/16 fell to 0.9990, 4/8 below 0.999.
FLOAT_CHANNELS = {384: HEAD_SIZE, 1536: 2 * HEAD_SIZE}
INT8_RECIPE = (
    "DynamicQuantizeMatMul int8 per column, outlier input channels float "
    f"({FLOAT_CHANNELS[384]} of 384, {FLOAT_CHANNELS[1536]} of 1536) reordered first, "
    "dense layers and QKV projections (MultiHeadAttention, no mask)"
)
# Texts shorter than this (word pieces, [CLS]/[SEP] included) are embedded by the float model:
# the fewest pieces were the furthest from it.
MIN_INT8_PIECES = 6
# Generic texts for the activation peaks (not the bench's or the tests' texts).
CALIBRATION = [
    "How do I reset my password when the reset email never arrives?",
    "The quarterly report shows revenue grew by twelve percent in the northern region.",
    "Install the package with pip, then run the migration before starting the server.",
    "Who approved the change to the firewall rules last Tuesday?",
    "Our office moves to the third floor in March; parking stays the same.",
    "ERROR 1045 (28000): Access denied for user 'app'@'10.0.3.7' (using password: YES)",
    "The contract renews automatically unless either party gives ninety days' notice.",
    "Patients must fast for eight hours before the blood test.",
    "kubectl rollout restart deployment/api -n production",
    "Which supplier delivers the replacement filters, and how long does it take?",
    "The recipe needs two cups of flour, a pinch of salt and three eggs.",
    "Le rapport annuel est disponible sur l'intranet depuis lundi.",
    "Backups run nightly at 02:00 UTC and are kept for thirty days.",
    "What is the escalation path when the payment provider is down?",
    "A library for parsing and validating JSON documents against a schema",
    "The team decided to retire the legacy billing system after the audit.",
]


def quantize_split(source: Path, target: Path) -> None:
    """``source`` (the float export) with its 18 dense MatMuls and 6 QKV projections split as
    ``INT8_RECIPE`` says."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    arrays = {t.name: numpy_helper.to_array(t).copy() for t in graph.initializer}
    layers = _layers(graph)
    ranges = _input_ranges(model, [layer[k].input[0] for layer in layers for k in MATMULS])
    hidden = _hidden_order(layers, arrays, ranges)
    _permute_hidden(graph, layers, arrays, hidden)
    widths = {}  # MatMul name: its float channels
    for layer in layers:
        w_out = arrays[layer["out"].input[1]]
        order = _order(ranges[layer["out"].input[0]], w_out)
        _take(arrays, layer["inter"].input[1], order, axis=1)
        _take(arrays, layer["gelu"].input[1], order, axis=0)
        _take(arrays, layer["out"].input[1], order, axis=0)
        widths[layer["out"].name] = FLOAT_CHANNELS[1536]
        widths[layer["inter"].name] = FLOAT_CHANNELS[384]
        _order_heads(layer, arrays, ranges)
        widths[layer["attn_out"].name] = FLOAT_CHANNELS[384]
    replaced = {n.name: _split(n, arrays, widths[n.name]) for n in graph.node if n.name in widths}
    for layer in layers:
        replaced[layer["attn"].name] = _attention(layer["attn"], arrays, FLOAT_CHANNELS[384])
    nodes = [x for n in graph.node for x in replaced.get(n.name, [n])]
    nodes += _unpermute_output(graph, arrays, np.argsort(hidden))
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    del graph.initializer[:]
    graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in arrays.items() if k in used)
    onnx.save(model, str(target))


MATMULS = ("attn_out", "inter", "out")
# The fused export's encoder layer, node by node, in the order ``_layers`` names them.
LAYER_OPS = (
    "Attention",
    "MatMul",
    "SkipLayerNormalization",
    "MatMul",
    "BiasGelu",
    "MatMul",
    "SkipLayerNormalization",
)


def _layers(graph) -> list[dict]:
    """Per encoder layer its nodes by role: attn, attn_out, attn_ln, inter, gelu, out, out_ln."""
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    attentions = [n for n in graph.node if n.op_type == "Attention"]
    layers = []
    for attn in attentions:
        (attn_out,) = consumers[attn.output[0]]
        (attn_ln,) = consumers[attn_out.output[0]]
        inter = next(n for n in consumers[attn_ln.output[0]] if n.op_type == "MatMul")
        (gelu,) = consumers[inter.output[0]]
        (out,) = consumers[gelu.output[0]]
        (out_ln,) = consumers[out.output[0]]
        roles = dict(attn=attn, attn_out=attn_out, attn_ln=attn_ln, inter=inter, gelu=gelu)
        layers.append(roles | {"out": out, "out_ln": out_ln})
        kinds = tuple(n.op_type for n in layers[-1].values())
        if kinds != LAYER_OPS:
            raise ValueError(f"unexpected encoder layer {kinds}")
    return layers


def _input_ranges(model, names: list[str]) -> dict:
    """The largest magnitude of each input channel of ``names`` over ``CALIBRATION``."""
    import numpy as np
    import onnx
    import onnxruntime
    from tokenizers import Tokenizer

    from kb.services.onnx_minilm import weights_dir

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in names:
        probe.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        )
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    tokenizer = Tokenizer.from_file(str(weights_dir() / "tokenizer.json"))
    tokenizer.no_padding()  # tokenizer.json pads to 128 pieces; a query is not padded
    out = {}
    for text in CALIBRATION:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        feed["token_type_ids"] = np.zeros_like(ids)
        for name, value in zip(names, session.run(names, feed), strict=True):
            peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            out[name] = np.maximum(out.get(name, peak), peak)
    return out


def _score(peaks, weight):
    """How much a channel (row of ``weight``) would widen the int8 scales."""
    import numpy as np

    return peaks * np.abs(weight).max(axis=1)


def _order(peaks, weight):
    """The channels, largest score first."""
    return _score(peaks, weight).argsort(kind="stable")[::-1]


def _hidden_order(layers, arrays, ranges):
    """One order of the hidden stream for every layer: a channel ranks by its largest score
    over the layers' first FFN MatMul, each layer's scores relative to its median."""
    import numpy as np

    scores = []
    for layer in layers:
        score = _score(ranges[layer["inter"].input[0]], arrays[layer["inter"].input[1]])
        scores.append(score / np.median(score))
    return np.max(scores, axis=0).argsort(kind="stable")[::-1]


def _take(arrays, name, order, axis):
    arrays[name] = arrays[name].take(order, axis=axis)


def _permute_hidden(graph, layers, arrays, order) -> None:
    """Reorder the hidden stream by ``order`` everywhere it is made or read."""
    (embed,) = [n for n in graph.node if n.op_type == "EmbedLayerNormalization"]
    for name in embed.input[2:5]:  # word, position, token type tables
        _take(arrays, name, order, axis=1)
    for name in embed.input[5:7]:  # its layer norm
        _take(arrays, name, order, axis=0)
    for layer in layers:
        _take(arrays, layer["attn"].input[1], order, axis=0)  # QKV rows
        _take(arrays, layer["inter"].input[1], order, axis=0)
        for dense, norm in (("attn_out", "attn_ln"), ("out", "out_ln")):
            _take(arrays, layer[dense].input[1], order, axis=1)
            for name in layer[norm].input[2:5]:  # weight, bias, the dense layer's bias
                _take(arrays, name, order, axis=0)


def _order_heads(layer, arrays, ranges) -> None:
    """The attention heads holding the largest channels first (Q, K and V moved together)."""
    import numpy as np

    weight = arrays[layer["attn_out"].input[1]]
    score = _score(ranges[layer["attn_out"].input[0]], weight).reshape(HEADS, HEAD_SIZE)
    heads = score.max(axis=1).argsort(kind="stable")[::-1]
    within = (heads[:, None] * HEAD_SIZE + np.arange(HEAD_SIZE)).reshape(-1)
    hidden = HEADS * HEAD_SIZE
    qkv = np.concatenate([within + part * hidden for part in range(3)])
    _take(arrays, layer["attn"].input[1], qkv, axis=1)
    _take(arrays, layer["attn"].input[2], qkv, axis=0)
    _take(arrays, layer["attn_out"].input[1], within, axis=0)


def _split(node, arrays, width: int, y: str = "") -> list:
    """Nodes computing ``node``'s x @ w into ``y`` (its output): x's first ``width`` channels
    times their rows of w in float, plus the rest through DynamicQuantizeMatMul (int8, a scale
    per column)."""
    import numpy as np
    from onnx import helper

    w = arrays[node.input[1]]
    rest = w[width:]
    scale = np.abs(rest).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    base = node.name.strip("/").replace("/", "_")
    x, y = node.input[0], y or node.output[0]
    arrays[f"{base}_int8_w"] = np.clip(np.rint(rest / scale), -127, 127).astype(np.int8)
    arrays[f"{base}_int8_scale"] = scale.astype(np.float32)
    quantised = [f"{base}_xq", f"{base}_int8_w", f"{base}_int8_scale"]
    arrays[f"{base}_float_w"] = np.ascontiguousarray(w[:width])
    arrays[f"{base}_sizes"] = np.array([width, w.shape[0] - width], dtype=np.int64)
    return [
        helper.make_node("Split", [x, f"{base}_sizes"], [f"{base}_xf", f"{base}_xq"], axis=-1),
        helper.make_node("MatMul", [f"{base}_xf", f"{base}_float_w"], [f"{base}_yf"]),
        helper.make_node(
            "DynamicQuantizeMatMul", quantised, [f"{base}_yq"], domain="com.microsoft"
        ),
        helper.make_node("Add", [f"{base}_yf", f"{base}_yq"], [y], name=node.name),
    ]


def _attention(node, arrays, width: int) -> list:
    """An Attention node's QKV projection split like a dense layer (``_split``), then
    MultiHeadAttention on its Q, K and V with the projection's bias. No mask: the int8 graph
    runs one text at a time, never padded."""
    import numpy as np
    from onnx import helper

    base = node.name
    arrays[f"{base}_qkv_sizes"] = np.array([HEADS * HEAD_SIZE] * 3, dtype=np.int64)
    qkv = [f"{base}_q", f"{base}_k", f"{base}_v"]
    return _split(node, arrays, width, f"{base}_qkv") + [
        helper.make_node("Split", [f"{base}_qkv", f"{base}_qkv_sizes"], qkv, axis=-1),
        helper.make_node(
            "MultiHeadAttention",
            [*qkv, node.input[2]],
            list(node.output),
            name=f"{base}_heads",
            domain="com.microsoft",
            num_heads=HEADS,
        ),
    ]


def _unpermute_output(graph, arrays, inverse) -> list:
    """A Gather putting the sentence embedding's values back in the model's order."""
    import numpy as np
    from onnx import helper

    output = graph.output[0].name
    (last,) = [n for n in graph.node if output in n.output]
    last.output[list(last.output).index(output)] = f"{output}_reordered"
    arrays["sentence_embedding_order"] = inverse.astype(np.int64)
    return [
        helper.make_node(
            "Gather", [f"{output}_reordered", "sentence_embedding_order"], [output], axis=1
        )
    ]
