"""A LangGraph supervisor -> worker hop with fake chat models, for
scripts/bench.sh. The supervisor's model names the worker, the worker's model
answers, the graph ends: one delegation hop as LangGraph users build it.
Also times the two fake-model calls alone, so the graph's own cost shows.

python3 langgraph_hop.py N   prints one BENCH_JSON line.
"""

import json
import sys
import time
from typing import Annotated, TypedDict

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class State(TypedDict):
    messages: Annotated[list, add_messages]
    next: str


supervisor_model = FakeListChatModel(responses=["worker"])
worker_model = FakeListChatModel(responses=["done"])


def supervisor(state: State):
    reply = supervisor_model.invoke(state["messages"])
    return {"messages": [reply], "next": reply.content}


def worker(state: State):
    return {"messages": [worker_model.invoke(state["messages"])]}


def build():
    g = StateGraph(State)
    g.add_node("supervisor", supervisor)
    g.add_node("worker", worker)
    g.add_edge(START, "supervisor")
    g.add_conditional_edges("supervisor", lambda s: s["next"], {"worker": "worker", "FINISH": END})
    g.add_edge("worker", END)
    return g.compile()


def timed(n, f):
    for _ in range(max(1, n // 10)):
        f()
    samples = []
    start = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter_ns()
        f()
        samples.append(time.perf_counter_ns() - t)
    wall = time.perf_counter() - start
    samples.sort()
    pick = lambda q: samples[min(len(samples) - 1, int(len(samples) * q))] / 1000.0
    return {"p50_us": pick(0.50), "p99_us": pick(0.99), "per_sec": n / wall}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    app = build()
    out = app.invoke({"messages": [("user", "do it")]})
    assert out["messages"][-1].content == "done", out
    graph = timed(n, lambda: app.invoke({"messages": [("user", "do it")]}))

    def models_only():
        supervisor_model.invoke([("user", "do it")])
        worker_model.invoke([("user", "do it")])

    models = timed(n, models_only)
    import langgraph

    version = getattr(langgraph, "__version__", None)
    if version is None:
        from importlib.metadata import version as v

        version = v("langgraph")
    print("BENCH_JSON " + json.dumps({"n": n, "graph": graph, "models": models, "langgraph": version}))


if __name__ == "__main__":
    main()
