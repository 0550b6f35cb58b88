"""compile_course.measurement.graphs: a graph Dynamo captured, as data."""

import json

import torch

from compile_course.measurement.graphs import graph_data


def captured(fn, *args):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(graph_data(gm))
        return gm.forward

    torch.compile(fn, backend=backend, fullgraph=True)(*args)
    return graphs


def test_a_graph_is_its_nodes_with_qualified_targets_and_bound_sources():
    def f(x, w):
        return torch.relu(x @ w).sum(dim=1, keepdim=True)[..., :1]

    graph, = captured(f, torch.randn(2, 3), torch.randn(3, 4))
    json.dumps(graph)                                            # plain data
    nodes = graph["nodes"]
    assert [n["op"] for n in nodes][:2] == ["placeholder", "placeholder"] and nodes[-1]["op"] == "output"
    assert [n["source"] for n in nodes[:2]] == ["L['x']", "L['w']"]
    targets = [n["target"] for n in nodes if n["op"] == "call_function"]
    assert "torch.relu" in targets and "_operator.matmul" in targets
    sliced = next(n for n in nodes if n["target"] == "_operator.getitem")
    assert sliced["args"]["tuple"][1] == {"tuple": [{"ellipsis": None}, {"slice": [None, 1, None]}]}
    summed = next(n for n in nodes if n["op"] == "call_method" and n["target"] == "sum")
    assert summed["kwargs"] == {"kwargs": {"dim": 1, "keepdim": True}}
    assert summed["args"]["tuple"][0] == {"node": "relu"}
