"""The graph side of source kind ``onnx`` (:mod:`aniso.sources.onnx_cnn`): which tensors of an ONNX CNN are its
hidden states, and where a quantised tensor's scale and zero point are. Reads ``onnx`` graphs only; no torch."""

from __future__ import annotations

__all__ = ["quantized_block_taps", "float_block_taps", "quantization", "unsigned_weights", "attention_found",
           "NotACNN"]


def _kernel(node) -> tuple[int, ...]:
    for a in node.attribute:
        if a.name == "kernel_shape":
            return tuple(a.ints)
    return ()


def _consumers(graph) -> dict[str, list]:
    """Tensor name → the nodes that read it."""
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return consumers


class NotACNN(ValueError):
    """A graph read as a CNN holds a Transformer's attention (:func:`attention_found`)."""


#: Products of two tensors: op type -> the positions of its two factors (ONNX operators MatMul, MatMulInteger,
#: QLinearMatMul, Einsum with two operands).
_PRODUCTS = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3), "Einsum": (0, 1)}


def attention_found(graph) -> str | None:
    """What in ``graph`` (an ``onnx.GraphProto`` in topological order) is a Transformer's attention, in one phrase,
    or None where it has none.

    Attention multiplies two computed tensors (queries times keys, attention weights times values; Vaswani et al.
    2017, eq. 1): a MatMul / MatMulInteger / QLinearMatMul / two-operand Einsum both of whose factors depend on the
    graph's inputs (neither an initializer, nor a Constant, nor computed from those alone). A CNN's classifier
    product (MatMul or Gemm) has a weight initializer and is not counted; neither are its convolutions. The phrase
    counts such products, those fed by a Softmax, and the graph's Conv nodes.
    """
    inits = {i.name for i in graph.initializer}
    computed = {i.name for i in graph.input if i.name not in inits}
    for node in graph.node:
        if any(name in computed for name in node.input):
            computed.update(node.output)
    producer = {out: node for node in graph.node for out in node.output}
    found = [node for node in graph.node if node.op_type in _PRODUCTS
             and len(node.input) > max(_PRODUCTS[node.op_type])
             and all(node.input[i] in computed for i in _PRODUCTS[node.op_type])]
    if not found:
        return None
    softmax = sum(any(getattr(producer.get(name), "op_type", None) == "Softmax" for name in node.input)
                  for node in found)
    convs = sum(node.op_type in ("Conv", "QLinearConv", "ConvInteger") for node in graph.node)
    ops = sorted({node.op_type for node in found})
    return (f"{len(found)} {'/'.join(ops)} node(s) multiplying two computed tensors (attention: queries x keys, "
            f"weights x values; the first {found[0].name or found[0].output[0]!r}), {softmax} of them fed by a "
            f"Softmax, and {convs} Conv node(s)")


def quantized_block_taps(graph) -> list[str]:
    """Names of the quantised tensors between the blocks of a QLinear CNN graph, in forward order.

    ``graph``: an ``onnx.GraphProto`` in topological order. The taps are the first QLinearConv's output (the
    stem), then for every 1 x 1 QLinearConv fed by a 3 x 3 QLinearConv (a block's projection) the projection's
    output or, if it only goes into a QLinearAdd (the block's residual branch), that residual sum, and last the final QLinearConv's output (the head)
    if it is not a projection itself. Raises ValueError if the graph has no QLinearConv.
    """
    producer = {out: node for node in graph.node for out in node.output}
    consumers = _consumers(graph)
    convs = [n for n in graph.node if n.op_type == "QLinearConv"]
    if not convs:
        raise ValueError("no QLinearConv node: not a statically quantised CNN")
    taps = [convs[0].output[0]]
    for conv in convs[1:]:
        source = producer.get(conv.input[0])
        if _kernel(conv) == (1, 1) and source is not None and source.op_type == "QLinearConv" \
                and _kernel(source) == (3, 3):
            out = conv.output[0]
            users = consumers.get(out, [])
            # The residual branch of a block goes only into its sum; a block output without a residual also
            # feeds the next block (and, as its skip input, the next block's sum).
            residual = len(users) == 1 and users[0].op_type == "QLinearAdd"
            taps.append(users[0].output[0] if residual else out)
    if convs[-1].output[0] not in taps:
        taps.append(convs[-1].output[0])
    return taps


def float_block_taps(graph) -> list[str]:
    """Names of the float tensors between the blocks of a residual CNN graph, in forward order.

    The stem's output (the first MaxPool's, else the first Relu's), then the output of every residual block: the
    Relu applied to a residual sum (an Add of two feature maps whose only consumer is a Relu), or the sum itself
    where no Relu follows. Raises ValueError if the graph has no Conv.
    """
    if not any(n.op_type == "Conv" for n in graph.node):
        raise ValueError("no Conv node: not a CNN")
    consumers = _consumers(graph)
    inits = {i.name for i in graph.initializer}
    stem = next((n for n in graph.node if n.op_type == "MaxPool"), None) \
        or next(n for n in graph.node if n.op_type == "Relu")
    taps = [stem.output[0]]
    for node in graph.node:
        if node.op_type != "Add" or any(i in inits for i in node.input):
            continue  # a bias addition, not a residual sum
        users = consumers.get(node.output[0], [])
        if len(users) == 1 and users[0].op_type == "Relu":
            taps.append(users[0].output[0])
        elif users and all(u.op_type in ("Conv", "Add", "MaxPool", "AveragePool", "GlobalAveragePool") for u in users):
            taps.append(node.output[0])
    return taps


def quantization(graph, tensor: str) -> tuple[str, str]:
    """(scale, zero point) initializer names of a tensor produced by QLinearConv / QLinearAdd."""
    for node in graph.node:
        if tensor in node.output:
            if node.op_type not in ("QLinearConv", "QLinearAdd"):
                raise ValueError(f"tap {tensor!r} is produced by {node.op_type}, not QLinearConv / QLinearAdd")
            return node.input[6], node.input[7]
    raise ValueError(f"no node produces tap {tensor!r}")


#: The integer products whose weights :func:`unsigned_weights` rewrites: op type -> (weight, weight zero point, input
#: zero point) input positions (ONNX operators QLinearConv and QLinearMatMul).
_INTEGER_PRODUCTS = {"QLinearConv": (3, 5, 2), "QLinearMatMul": (3, 5, 2)}


def unsigned_weights(graph) -> int:
    """Rewrite, in place, every int8 weight of a QLinearConv or QLinearMatMul with uint8 activations as uint8 (each
    value and its zero point plus 128, the same integers w − zero point), so that onnxruntime computes every such
    product as u8 × u8 with exact int32 sums on every x86-64 CPU.

    Why: onnxruntime's u8 × s8 kernels on x86-64 CPUs without AVX-512 VNNI multiply pairs with ``vpmaddubsw``,
    whose 16-bit intermediate saturates when two adjacent products exceed 32,767 (weights outside [−64, 63]: Intel's
    oneDNN guide, "Nuances of int8 computations"; onnxruntime's quantization guide recommends u8 × u8 there and its
    ``session.x64quantprecision`` option converts only some operators, microsoft/onnxruntime#12088). The same model
    then gives other hidden states on such CPUs than on CPUs with VNNI or AMX, where the sums are exact (measured:
    the statically quantised MobileNetV2 of the ONNX Model Zoo, its maps' avg cosine similarity up to 0.025 apart
    on two machines; on the one with VNNI its first maps equal ``onnx.reference``'s exact evaluation). The
    u8 × u8 kernels (16-bit ``vpmaddwd`` on zero-extended values) cannot saturate, so the maps are the exact integer
    arithmetic ONNX defines for the graph everywhere.

    ``graph``: an ``onnx.GraphProto`` whose weights and zero points are initializers (a node whose weight is computed
    is left as it is). New initializers are added, and the originals removed where no node reads them any more;
    returns the number of nodes rewritten. Only operators whose input zero point is uint8 are rewritten (u8 × u8 is what the
    runtime supports), and an int8 weight's zero point must be an int8 initializer too.
    """
    from onnx import TensorProto, numpy_helper
    import numpy as np

    inits = {i.name: i for i in graph.initializer}
    made: dict[str, str] = {}

    def as_unsigned(name: str) -> str:
        if name not in made:
            values = numpy_helper.to_array(inits[name]).astype(np.int16) + 128
            new = numpy_helper.from_array(values.astype(np.uint8), f"{name}__as_uint8")
            graph.initializer.append(new)
            made[name] = new.name
        return made[name]

    rewritten = 0
    for node in graph.node:
        where = _INTEGER_PRODUCTS.get(node.op_type)
        if where is None or len(node.input) <= max(where):
            continue
        w, w_zero, x_zero = (node.input[i] for i in where)
        if not all(name in inits for name in (w, w_zero, x_zero)):
            continue
        if inits[x_zero].data_type != TensorProto.UINT8 or inits[w].data_type != TensorProto.INT8 \
                or inits[w_zero].data_type != TensorProto.INT8:
            continue
        node.input[where[0]], node.input[where[1]] = as_unsigned(w), as_unsigned(w_zero)
        rewritten += 1
    read = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    unread = [i for i in graph.initializer if i.name in made and i.name not in read]
    for init in unread:  # the int8 originals no node reads any more
        graph.initializer.remove(init)
    return rewritten
