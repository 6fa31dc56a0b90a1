"""Tests of diffcompare.engine.graph (inspecting and drawing autograd graphs).

The first half runs on the real engine; the second half on small fake nodes
that follow the Node / SavedTensor contract, to pin down the layout and the
byte counting on shapes of graph the engine does not easily produce.
"""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from diffcompare.engine import Tensor
from diffcompare.engine import graph
from diffcompare.viz import graph as viz_graph
from diffcompare.engine.graph import nodes, summarize, summary_text, to_records
from diffcompare.viz.graph import render_with_graphviz, to_dot, to_svg
from diffcompare.viz.layout import Box, Edge, _pack, layered_layout, render_svg

SVG_NS = '{http://www.w3.org/2000/svg}'


def names_of(t):
    return [n.name() for n in nodes(t)]


def svg_nodes(svg):
    root = ET.fromstring(svg)
    return [g for g in root.iter(SVG_NS + 'g') if 'node' in g.get('class', '').split()]


def svg_texts(svg):
    return [el.text for el in ET.fromstring(svg).iter(SVG_NS + 'text')]


# --------------------------------------------------------------------------- seed graphs


@pytest.fixture
def mean_graph():
    """w = [2.] (requires grad), x = [1., 2.], L = (x * w).mean()."""
    w = Tensor([2.], requires_grad=True)
    x = Tensor([1., 2.])
    loss = (x * w).mean()
    return w, x, loss


@pytest.fixture
def unbind_graph():
    a = Tensor([1., 2., 3.], requires_grad=True)
    b, c, d = a.unbind()
    return a, b * c * d


def test_nodes_of_mean_graph(mean_graph):
    w, x, loss = mean_graph
    order = nodes(loss)
    assert [n.name() for n in order] == ['MeanBackward0', 'MulBackward0', 'AccumulateGrad']
    assert order[0] is loss.grad_fn
    assert order[2].variable is w


def test_nodes_of_tensor_without_graph():
    assert nodes(Tensor([1., 2.])) == []
    assert nodes(Tensor([1.], requires_grad=True)) == []
    s = summarize(Tensor([1.]))
    assert (s.node_count, s.edges, s.leaves, s.total_saved_bytes, s.saved) == (0, 0, 0, 0, [])


def test_nodes_accepts_a_node(mean_graph):
    _, _, loss = mean_graph
    assert names_of(loss.grad_fn) == ['MeanBackward0', 'MulBackward0', 'AccumulateGrad']


def test_summary_of_mean_graph(mean_graph):
    w, x, loss = mean_graph
    s = summarize(loss)
    assert s.node_count == 3
    assert s.by_name == {'AccumulateGrad': 1, 'MeanBackward0': 1, 'MulBackward0': 1}
    assert s.leaves == 1
    assert s.edges == 2                 # Mean -> Mul, Mul -> AccumulateGrad(w)
    # w's gradient needs x; x needs no gradient, so w is not saved.
    assert [(r.node, r.shape, r.dtype, r.nbytes) for r in s.saved] == [
        ('MulBackward0', (2,), 'float64', 16)]
    assert s.total_saved_bytes == 16
    assert s.released_nodes == 0


def test_mul_saves_x_itself(mean_graph):
    w, x, loss = mean_graph
    mul = nodes(loss)[1]
    (saved,) = mul.saved.values()
    assert saved.data is x.data


def test_summary_text_mentions_every_node_and_total(mean_graph):
    w, x, loss = mean_graph
    text = summary_text(loss, names={w: 'w'})
    lines = text.splitlines()
    assert lines[0] == 'graph of tensor () float64, grad_fn=MeanBackward0'
    assert lines[2].split() == ['0', 'MeanBackward0', '1']
    assert lines[3].split()[:4] == ['1', 'MulBackward0', '-,', '2']
    assert lines[3].endswith('(2,) float64, 16 B')
    assert lines[4].split() == ['2', 'AccumulateGrad', 'leaf', 'w:', '(1,)', 'float64']
    assert lines[5] == ('3 nodes (AccumulateGrad 1, MeanBackward0 1, MulBackward0 1), '
                        '2 edges, 1 leaf')
    assert lines[6] == '1 saved tensor holding 16 bytes (shared memory counted once)'


def test_summary_text_without_graph():
    assert summary_text(Tensor([1., 2.])) == (
        'graph of tensor (2,) float64: no grad_fn, so no graph '
        '(a leaf, or computed without grad)')


def test_to_records(mean_graph):
    w, x, loss = mean_graph
    records = to_records(loss)
    assert [r['id'] for r in records] == [0, 1, 2]
    assert [r['name'] for r in records] == ['MeanBackward0', 'MulBackward0', 'AccumulateGrad']
    assert records[0]['next'] == [(1, 0)]
    assert records[1]['next'] == [None, (2, 0)]
    assert records[2]['next'] == []
    assert list(records[1]['saved'].values()) == [((2,), 'float64', 16)]
    assert [r['saved_bytes'] for r in records] == [0, 16, 0]


def test_to_records_loads_into_pandas(mean_graph):
    pd = pytest.importorskip('pandas')
    df = pd.DataFrame(to_records(mean_graph[2]))
    assert list(df['name']) == ['MeanBackward0', 'MulBackward0', 'AccumulateGrad']
    assert int(df['saved_bytes'].sum()) == 16


def test_unbind_graph_structure(unbind_graph):
    a, e = unbind_graph
    order = nodes(e)
    assert [n.name() for n in order] == ['MulBackward0', 'MulBackward0', 'UnbindBackward0',
                                         'AccumulateGrad']
    unbind = order[2]
    assert unbind.num_outputs == 3
    # (b * c) * d: the outer Mul gets d (output 2), the inner one b and c (outputs 0, 1).
    into_unbind = [nr for n in order for child, nr in n.next_functions if child is unbind]
    assert sorted(into_unbind) == [0, 1, 2]
    assert to_records(e)[0]['next'] == [(1, 0), (2, 2)]
    assert to_records(e)[1]['next'] == [(2, 0), (2, 1)]
    assert summarize(e).edges == 5      # 2 + 2 into Mul/Unbind, 1 into AccumulateGrad


def test_unbind_output_indices_in_text_dot_and_svg(unbind_graph):
    a, e = unbind_graph
    text = summary_text(e)
    assert '2:0, 2:1' in text and '1, 2:2' in text
    dot = to_dot(e)
    for k in range(3):
        assert f'"n2" -> "n{1 if k < 2 else 0}" [label="{k}"]' in dot
    assert len([ln for ln in dot.splitlines() if '->' in ln and 'label=' in ln]) == 3
    svg = to_svg(e)
    root = ET.fromstring(svg)
    labels = sorted(t.text for t in root.iter(SVG_NS + 'text')
                    if t.get('class') == 'edge-label')
    assert labels == ['0', '1', '2']


def test_saved_bytes_of_unbind_graph(unbind_graph):
    a, e = unbind_graph
    s = summarize(e)
    # Each Mul saves both operands: a 0-d float64 (8 bytes) each.
    assert [(r.node_index, r.shape, r.nbytes) for r in s.saved] == [
        (0, (), 8), (0, (), 8), (1, (), 8), (1, (), 8)]


def test_saved_input_shared_by_two_nodes_counts_once():
    x = Tensor(np.arange(4.))                          # 32 bytes, needs no grad
    w = Tensor([1., 2., 3., 4.], requires_grad=True)
    loss = (x * w + x * w.exp()).sum()
    s = summarize(loss)
    x_rows = [r for r in s.saved if r.shape == (4,)]
    assert sum(r.nbytes for r in x_rows) > s.total_saved_bytes
    # Saved: x by both Muls (one buffer), and exp's result.
    assert sorted((r.node, r.nbytes) for r in s.saved) == [
        ('ExpBackward0', 32), ('MulBackward0', 32), ('MulBackward0', 32)]
    assert s.total_saved_bytes == 64


def test_released_graph_has_no_saved_bytes(mean_graph):
    w, x, loss = mean_graph
    assert summarize(loss).total_saved_bytes == 16
    loss.backward()
    s = summarize(loss)
    assert s.node_count == 3
    assert s.saved == [] and s.total_saved_bytes == 0
    assert s.released_nodes >= 1
    assert 'retain_graph=True' in summary_text(loss)
    assert 'released' in to_dot(loss)


def test_retain_graph_keeps_saved_bytes(mean_graph):
    w, x, loss = mean_graph
    loss.backward(retain_graph=True)
    assert summarize(loss).total_saved_bytes == 16


def test_to_dot_styles(mean_graph):
    w, x, loss = mean_graph
    dot = to_dot(loss, names={w: 'w'})
    assert dot.startswith('digraph autograd {\n')
    assert dot.endswith('}\n')
    assert '"out" [label="3", fillcolor="#caff70"]' in dot      # small tensors show their values
    assert '"n0" [label="MeanBackward0", fillcolor="#d3d3d3"]' in dot
    assert '"n2" [label="AccumulateGrad", fillcolor="#add8e6"]' in dot
    assert '"leaf2" [label="w\\n[2]", fillcolor="#eef6ff"]' in dot
    assert '"s1_0" -> "n1" [dir=none, style=dashed]' in dot
    assert '"leaf2" -> "n2" [dir=none]' in dot
    assert '"n0" -> "out"\n' in dot
    assert '"n2" -> "n1"\n' in dot
    assert '"s1_0" [label="self\\n[1, 2]"' in dot
    named = to_dot(loss, names={w: 'w', x: 'x'})       # a saved tensor is named by its variable
    assert '"s1_0" [label="self = x\\n[1, 2]"' in named


def test_to_dot_without_saved(mean_graph):
    dot = to_dot(mean_graph[2], show_saved=False)
    assert 'style=dashed' not in dot and '"s1_0"' not in dot


def test_names_by_id(mean_graph):
    w, x, loss = mean_graph
    assert to_dot(loss, names={id(w): 'w'}) == to_dot(loss, names={w: 'w'})
    assert '"out" [label="L\\n3"' in to_dot(loss, names={loss: 'L'})


def test_dot_string_escaping():
    assert viz_graph._dot_str('a "b"\\c\nd') == '"a \\"b\\"\\\\c\\nd"'


def test_to_svg_is_valid_self_contained_and_deterministic(mean_graph):
    w, x, loss = mean_graph
    svg = to_svg(loss, names={w: 'w'})
    root = ET.fromstring(svg)
    assert root.tag == SVG_NS + 'svg'
    # out, 3 nodes, leaf w, one saved tensor
    kinds = [g.get('class') for g in svg_nodes(svg)]
    assert kinds == ['node node-output', 'node node-op', 'node node-op', 'node node-saved',
                     'node node-accumulate', 'node node-leaf']
    assert sum(1 for g in svg_nodes(svg) if g.find(SVG_NS + 'rect') is not None) == 6
    legend = root.find(f'{SVG_NS}g[@class="legend"]')            # the key explains every colour
    assert {t.text for t in legend.iter(SVG_NS + 'text')} == {
        'output tensor', 'backward node', 'AccumulateGrad', 'leaf tensor', 'saved for backward',
        'saved by'}
    assert svg.count('http') == 1 and 'xmlns="http://www.w3.org/2000/svg"' in svg
    assert 'href' not in svg and '@import' not in svg and 'url(' not in svg
    assert 'DejaVu Sans, Arial, sans-serif' in svg
    assert {'MeanBackward0', 'MulBackward0', 'AccumulateGrad', 'w', '[2]'} <= set(
        svg_texts(svg))
    assert to_svg(loss, names={w: 'w'}) == svg
    assert str(id(w)) not in svg and hex(id(w)) not in svg


def test_to_svg_same_graph_built_twice_gives_same_string():
    def build():
        w = Tensor([[1., 2.], [3., 4.]], requires_grad=True)
        x = Tensor([[1.], [0.5]])
        return to_svg(((w @ x).relu() + 1.).sum())
    assert build() == build()


def test_to_svg_without_saved(mean_graph):
    svg = to_svg(mean_graph[2], show_saved=False)
    assert len(svg_nodes(svg)) == 5
    assert 'stroke-dasharray' not in svg


def test_to_svg_of_tensor_without_graph():
    svg = to_svg(Tensor([1., 2.]))
    assert [g.get('class') for g in svg_nodes(svg)] == ['node node-output']


def test_svg_layout_puts_leaves_above_output(mean_graph):
    w, x, loss = mean_graph
    root = ET.fromstring(to_svg(loss))
    ys = {g.get('class'): float(g.find(SVG_NS + 'rect').get('y')) for g in root.iter(SVG_NS + 'g')}
    assert ys['node node-leaf'] < ys['node node-accumulate'] < ys['node node-output']


def mlp_loss(layers=6):
    rng = np.random.default_rng(0)
    h = Tensor(rng.standard_normal((4, 3)))
    for _ in range(layers):
        W = Tensor(rng.standard_normal((3, 3)), requires_grad=True)
        b = Tensor(rng.standard_normal(3), requires_grad=True)
        h = (h @ W + b).relu()
    return (h * h).mean()


def test_summary_of_mlp_counts_shared_activations_once():
    s = summarize(mlp_loss())
    assert (s.node_count, s.edges, s.leaves) == (32, 32, 12)
    assert s.by_name == {'AccumulateGrad': 12, 'AddBackward0': 6, 'MatmulBackward0': 6,
                         'MeanBackward0': 1, 'MulBackward0': 1, 'ReluBackward0': 6}
    assert len(s.saved) == 19
    assert sum(r.nbytes for r in s.saved) == 1704
    # Each relu result (96 B) is also saved by the next matmul, and h * h saves the
    # last one twice: 6 activations + the input x (96 B each) + 5 weights (72 B each).
    assert s.total_saved_bytes == 7 * 96 + 5 * 72


def test_bigger_graph_draws():
    """A 64-box MLP graph: valid SVG, one group per box, boxes don't overlap."""
    loss = mlp_loss()
    s = summarize(loss)
    svg = to_svg(loss)
    groups = svg_nodes(svg)
    assert len(groups) == 1 + s.node_count + s.leaves + len(s.saved) == 64
    rects = [tuple(float(g.find(SVG_NS + 'rect').get(k)) for k in ('x', 'y', 'width', 'height'))
             for g in groups]
    for i, (x1, y1, w1, h1) in enumerate(rects):
        for x2, y2, w2, h2 in rects[i + 1:]:
            assert x1 + w1 <= x2 or x2 + w2 <= x1 or y1 + h1 <= y2 or y2 + h2 <= y1


def test_render_with_graphviz_without_dot(monkeypatch, mean_graph):
    monkeypatch.setattr(viz_graph.shutil, 'which', lambda name: None)
    with pytest.raises(RuntimeError, match='install Graphviz.*to_svg'):
        render_with_graphviz(to_dot(mean_graph[2]))


def test_render_with_graphviz_with_dot(mean_graph):
    if viz_graph.shutil.which('dot') is None:
        pytest.skip('Graphviz not installed')
    out = render_with_graphviz(to_dot(mean_graph[2]), 'svg')
    assert b'MulBackward0' in out
    with pytest.raises(ValueError):
        render_with_graphviz('digraph {}', fmt='svg -o /tmp/x')


# --------------------------------------------------------------------------- fake nodes


class FakeSaved:
    def __init__(self, data, is_output=False):
        self.data, self.is_output, self.version = data, is_output, 0
        self.shape, self.dtype, self.nbytes = data.shape, data.dtype, data.nbytes


class FakeNode:
    def __init__(self, name, next_functions=(), saved=None, num_outputs=1, variable=None):
        self._name, self.next_functions = name, tuple(next_functions)
        self.saved, self.num_outputs, self.variable = saved or {}, num_outputs, variable
        self.released = False

    def name(self):
        return self._name


class FakeTensor:
    def __init__(self, shape, grad_fn=None, output_nr=0, requires_grad=False):
        self.data = np.zeros(shape)
        self.shape, self.dtype = self.data.shape, self.data.dtype
        self.grad_fn, self.output_nr, self.requires_grad = grad_fn, output_nr, requires_grad


def leaf_node(shape=(2,)):
    return FakeNode('AccumulateGrad', variable=FakeTensor(shape, requires_grad=True))


def test_nodes_topological_on_diamond():
    acc = leaf_node()
    left = FakeNode('ExpBackward0', [(acc, 0)])
    right = FakeNode('NegBackward0', [(acc, 0)])
    mid = FakeNode('MulBackward0', [(left, 0), (acc, 0)])
    top = FakeNode('AddBackward0', [(mid, 0), (right, 0), (None, 0)])
    out = FakeTensor((2,), grad_fn=top)
    order = nodes(out)
    assert [n.name() for n in order] == ['AddBackward0', 'MulBackward0', 'NegBackward0',
                                         'ExpBackward0', 'AccumulateGrad']
    pos = {id(n): i for i, n in enumerate(order)}
    for n in order:
        for child, _ in n.next_functions:
            if child is not None:
                assert pos[id(n)] < pos[id(child)]
    assert summarize(out).edges == 6


def test_nodes_handles_long_chain_without_recursion():
    node = leaf_node()
    for _ in range(5000):
        node = FakeNode('NegBackward0', [(node, 0)])
    assert len(nodes(FakeTensor((2,), grad_fn=node))) == 5001


def test_distinct_bytes_rules():
    base = np.arange(10.)                                     # 80 bytes
    same = [FakeSaved(base), FakeSaved(base), FakeSaved(base[:])]
    assert graph._distinct_nbytes(same) == 80                 # one region, three times
    halves = [FakeSaved(base[:5]), FakeSaved(base[5:])]
    assert graph._distinct_nbytes(halves) == 80
    overlapping = [FakeSaved(base[:8]), FakeSaved(base[2:])]  # 64 + 64, capped at 80
    assert graph._distinct_nbytes(overlapping) == 80
    other = np.arange(10.)
    assert graph._distinct_nbytes([FakeSaved(base), FakeSaved(other)]) == 160
    released = FakeSaved(base)
    released.data = None
    assert graph._distinct_nbytes([released]) == 0


def test_saved_output_is_marked():
    acc = leaf_node()
    res = np.ones(2)
    exp = FakeNode('ExpBackward0', [(acc, 0)], saved={'result': FakeSaved(res, True)})
    out = FakeTensor((2,), grad_fn=exp)
    assert summarize(out).saved[0].is_output
    assert '"s0_0" [label="result (output)\\n[1, 1]"' in to_dot(out)
    big = FakeNode('ExpBackward0', [(acc, 0)], saved={'result': FakeSaved(np.ones(5), True)})
    assert '"s0_0" [label="result (output)\\n(5,) float64, 40 B"' in to_dot(FakeTensor((5,), grad_fn=big))


def test_output_of_multi_output_node_is_labelled():
    split = FakeNode('SplitBackward0', [(leaf_node((4,)), 0)], num_outputs=2)
    out = FakeTensor((2,), grad_fn=split, output_nr=1)
    assert '"n0" -> "out" [label="1"]' in to_dot(out)


def test_svg_escapes_text():
    node = FakeNode('Weird<&"\'>Backward0', [(leaf_node(), 0)])
    svg = to_svg(FakeTensor((2,), grad_fn=node))
    assert 'Weird&lt;&amp;&quot;&#x27;&gt;Backward0' in svg
    assert 'Weird<&"\'>Backward0' in svg_texts(svg)
    assert '"Weird<&\\"\'>Backward0"' in to_dot(FakeTensor((2,), grad_fn=node))


# --------------------------------------------------------------------------- layout


def test_pack_is_least_squares_with_gaps():
    assert _pack([0.0, 0.0], [10.0]) == [-5.0, 5.0]
    assert _pack([0.0, 100.0, 100.0], [10.0, 10.0]) == [0.0, 95.0, 105.0]
    assert _pack([3.0], []) == [3.0]


def test_layout_edges_point_down_and_boxes_do_not_overlap():
    sizes = {k: (30 + 5 * i, 20) for i, k in enumerate('abcdefg')}
    edges = [('a', 'c'), ('b', 'c'), ('c', 'g'), ('d', 'g'), ('a', 'g'), ('e', 'f'),
             ('f', 'g'), ('b', 'f')]
    lay = layered_layout(sizes, edges)
    for (src, dst), route in zip(edges, lay.routes):
        assert route[0][1] == lay.centers[src][1] + 10       # leaves the source's bottom
        assert route[-1][1] == lay.centers[dst][1] - 10      # enters the target's top
        assert all(p[1] <= q[1] for p, q in zip(route, route[1:]))
    assert len(lay.routes[4]) == 2 + 2                      # a -> g passes one layer
    keys = list(sizes)
    for i, k in enumerate(keys):
        for m in keys[i + 1:]:
            (x1, y1), (x2, y2) = lay.centers[k], lay.centers[m]
            if y1 == y2:
                assert abs(x1 - x2) >= (sizes[k][0] + sizes[m][0]) / 2
    assert all(0 < x < lay.width and 0 < y < lay.height for x, y in lay.centers.values())


def test_layout_orders_a_crossing_pair():
    # b feeds d and a feeds c; in input order the edges cross, after ordering they must not.
    lay = layered_layout({'c': (20, 20), 'd': (20, 20), 'a': (20, 20), 'b': (20, 20),
                          'out': (20, 20)},
                         [('b', 'd'), ('a', 'c'), ('c', 'out'), ('d', 'out'),
                          ('a', 'd')])
    x = {k: v[0] for k, v in lay.centers.items()}
    assert (x['a'] < x['b']) == (x['c'] < x['d'])


def test_layout_rejects_cycles():
    with pytest.raises(ValueError, match='cycle'):
        layered_layout({'a': (1, 1), 'b': (1, 1)}, [('a', 'b'), ('b', 'a')])


def test_layout_is_deterministic():
    sizes = {f'v{i}': (20 + i % 3 * 10, 20) for i in range(12)}
    edges = [(f'v{i}', f'v{j}') for i in range(12) for j in range(i + 1, 12) if (i * j) % 5 == 1]
    assert layered_layout(sizes, edges) == layered_layout(dict(sizes), list(edges))


def test_render_svg_generic():
    svg = render_svg([Box('a', ['a & b'], '#ffffff', 'x', 'tip <1>'), Box('b', ['c'], '#000')],
                     [Edge('a', 'b', 'k', 'dashed')])
    root = ET.fromstring(svg)
    assert [t.text for t in root.iter(SVG_NS + 'text')] == ['k', 'a & b', 'c']
    assert root.find(f'.//{SVG_NS}title').text == 'tip <1>'
    assert 'polygon' not in svg                              # dashed edges have no arrowhead


def test_render_svg_moves_crowded_labels_next_to_arrowheads():
    boxes = [Box('s', ['s'], '#fff')] + [Box(f't{i}', ['target'], '#fff') for i in range(6)]
    svg = render_svg(boxes, [Edge('s', f't{i}', str(i)) for i in range(6)])
    root = ET.fromstring(svg)
    label_ys = [float(t.get('y')) for t in root.iter(SVG_NS + 'text')
                if t.get('class') == 'edge-label']
    rect_ys = sorted({float(r.get('y')) for r in root.iter(SVG_NS + 'rect')
                      if r.get('class') != 'background'})
    assert len(label_ys) == 6
    assert all(rect_ys[1] - 12 < y < rect_ys[1] for y in label_ys)   # just above targets


# --------------------------------------------------------------------------- torch's graph, the graph command

def test_torch_graph_drawn_by_the_same_drawer():
    torch = pytest.importorskip('torch')
    a = torch.tensor([1., 2., 3.], dtype=torch.float64, requires_grad=True)
    b, c, d = a.unbind()
    e = b * c * d
    dot = viz_graph.to_dot(e, names={a: 'a', b: 'b', c: 'c', d: 'd'})
    assert '"n2" [label="UnbindBackward0"' in dot and '"leaf3" [label="a\\n[1, 2, 3]"' in dot
    assert '"s1_0" [label="self = b\\n1"' in dot and '"s1_1" [label="other = c\\n2"' in dot
    assert '"n2" -> "n1" [label="1"]' in dot and '"n2" -> "n0" [label="2"]' in dot   # output indices
    svg = viz_graph.to_svg(e)
    assert 'class="legend"' in svg and 'torch::' not in svg


def test_graph_command_draws_a_users_function(tmp_path, capsys):
    from diffcompare.cli import main

    model = tmp_path / 'model.py'
    model.write_text('inputs = {"x": [1.0, 2.0], "w": [2.0]}\nrequires_grad = ["w"]\n'
                     'def f(x, w):\n    return (x * w).mean()\n')
    assert main(['graph', str(model), '-o', str(tmp_path / 'out')]) == 0
    svg = (tmp_path / 'out' / 'f-engine.svg').read_text()
    assert 'self = x' in svg and 'MulBackward0' in svg and 'class="legend"' in svg
    assert 'MeanBackward0' in capsys.readouterr().out
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    assert 'self = x' in (tmp_path / 'out' / 'f-torch.svg').read_text()


def test_graph_command_bad_file_is_one_line_error(tmp_path, capsys):
    from diffcompare.cli import main

    bad = tmp_path / 'bad.py'
    bad.write_text('def f(x):\n    return x\n')
    assert main(['graph', str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count('\n') == 0 and 'inputs' in err


def test_one_walk_for_the_engine_torch_the_drawing_and_the_stepper():
    """``nodes`` is the one graph walk: it reads torch's graphs too, and the stepper's and the
    drawing's node keys (n<i>) are its positions (the stepper walked the graph its own way)."""
    from diffcompare.viz import libs
    from diffcompare.viz.steps import record

    torch = pytest.importorskip("torch")
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    loss = ((a * b).sum() + (a * a).sum()).exp()
    names = [n.name().replace("torch::autograd::", "") for n in nodes(loss)]
    assert names[:2] == ["ExpBackward0", "AddBackward0"] and names.count("AccumulateGrad") == 2
    assert len(names) == 8 and len({id(n) for n in nodes(loss)}) == 8
    steps = record(loss, libs.torch(), {a: "a", b: "b"})
    keys = {s["node"]: s["key"] for s in steps["backward"]}
    assert keys["ExpBackward0"] == "n0" and keys["AddBackward0"] == "n1"
    assert sorted(keys.values()) == sorted(f"n{i}" for i in range(8))
