"""The LangGraph side of the peer comparison (`benches/peers/run`).

The same three workloads as `agentvisor.rs`, written the way LangGraph's own agents are
written (a model node and a tool node in a loop; children as a subgraph fanned out with
`Send`; a fork as an update to a checkpoint, which branches the thread), on LangGraph's
SQLite checkpointer in a fresh temporary file, with `durability="sync"`: every step's
checkpoint is committed before the next step starts, as agentvisor commits every turn. The
"model" is scripted, as agentvisor's scripted brain is, and messages are plain dicts (cheaper
to serialize than LangChain message objects). Prints one JSON line per run:
{"side", "workload", "size", "seconds"}.

    python langgraph_side.py turns 200 11
    python langgraph_side.py fanout 1000
    python langgraph_side.py fork 100000
"""

import asyncio
import json
import operator
import os
import sys
import tempfile
import time
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

CALLS_PER_BUILD_TURN = 99


class AgentState(TypedDict, total=False):
    messages: Annotated[list, operator.add]
    tasks: Annotated[list, operator.add]
    findings: Annotated[list, operator.add]
    turn: int
    turns: int
    result: str


def assistant(turn, calls):
    return {
        "role": "assistant",
        "tool_calls": [
            {"id": f"call_{turn}_{i}", "name": name, "arguments": args} for i, (name, args) in enumerate(calls)
        ],
    }


def tool_result(call, text):
    return {"role": "tool", "tool_call_id": call["id"], "text": text}


def agent_loop(model, tools, saver=None):
    """The agent loop LangGraph agents are written as: a model node and a tool node, back to
    the model until a tool call sets the result."""
    graph = StateGraph(AgentState)
    graph.add_node("model", model)
    graph.add_node("tools", tools)
    graph.add_edge(START, "model")
    graph.add_edge("model", "tools")
    graph.add_conditional_edges("tools", lambda s: END if s.get("result") else "model")
    return graph.compile(checkpointer=saver)


async def saver_at(path):
    """The checkpointer on a fresh file, its durability checked (WAL, synchronous=FULL)."""
    manager = AsyncSqliteSaver.from_conn_string(path)
    saver = await manager.__aenter__()
    await saver.setup()
    async with saver.conn.execute("PRAGMA synchronous") as cursor:
        (synchronous,) = await cursor.fetchone()
    async with saver.conn.execute("PRAGMA journal_mode") as cursor:
        (journal,) = await cursor.fetchone()
    if synchronous != 2 or journal.lower() != "wal":
        raise SystemExit(f"the checkpointer is not at agentvisor's durability: synchronous={synchronous} journal={journal}")
    return manager, saver


# --- many agents × turns -------------------------------------------------------------------


def worker_graph(saver):
    """One agent: `turns - 1` turns of one add_task call, then a finish call."""

    def model(state):
        turn = state.get("turn", 0) + 1
        if turn < state["turns"]:
            message = assistant(turn, [("add_task", {"title": f"step {turn}"})])
        else:
            message = assistant(turn, [("finish", {"result": "done"})])
        return {"messages": [message], "turn": turn}

    def tools(state):
        out = {"messages": [], "tasks": []}
        for call in state["messages"][-1]["tool_calls"]:
            if call["name"] == "add_task":
                out["tasks"].append(call["arguments"]["title"])
                out["messages"].append(tool_result(call, json.dumps({"added": len(state.get("tasks", [])) + 1})))
            else:
                out["result"] = call["arguments"]["result"]
                out["messages"].append(tool_result(call, json.dumps({"ending": "declared"})))
        return out

    return agent_loop(model, tools, saver)


async def turns_workload(path, agents, turns):
    manager, saver = await saver_at(path)
    app = worker_graph(saver)
    start = time.perf_counter()
    runs = [
        app.ainvoke(
            {"messages": [{"role": "user", "text": f"Work through task list {i}."}], "turns": turns},
            {"configurable": {"thread_id": f"worker-{i}"}},
            durability="sync",
        )
        for i in range(agents)
    ]
    for out in await asyncio.gather(*runs):
        assert out["result"] == "done" and len(out["tasks"]) == turns - 1, out
    took = time.perf_counter() - start
    await manager.__aexit__(None, None, None)
    return took


# --- fan-out of children ------------------------------------------------------------------


def child_graph():
    """A child: one turn, a finish call. Compiled without a checkpointer of its own, so it
    checkpoints into its parent's (each child under its own namespace)."""

    def model(state):
        return {"messages": [assistant(1, [("finish", {"result": "one finding"})])], "turn": 1}

    def tools(state):
        call = state["messages"][-1]["tool_calls"][0]
        return {"messages": [tool_result(call, json.dumps({"ending": "declared"}))], "result": "one finding"}

    return agent_loop(model, tools)


def lead_graph(saver, children):
    child = child_graph()

    def model(state):
        turn = state.get("turn", 0) + 1
        if turn == 1:
            calls = [("spawn_subagent", {"agent": "child", "prompt": f"Report finding {i}."}) for i in range(children)]
        else:
            calls = [("finish", {"result": "all findings collected"})]
        return {"messages": [assistant(turn, calls)], "turn": turn}

    def fan_out(state):
        last = state["messages"][-1]
        if last["tool_calls"][0]["name"] == "finish":
            return "finish"
        return [Send("child", {"call": call}) for call in last["tool_calls"]]

    async def run_child(task):
        call = task["call"]
        out = await child.ainvoke({"messages": [{"role": "user", "text": call["arguments"]["prompt"]}]})
        return {"messages": [tool_result(call, json.dumps({"result": out["result"]}))], "findings": [out["result"]]}

    def finish(state):
        return {"result": state["messages"][-1]["tool_calls"][0]["arguments"]["result"]}

    graph = StateGraph(AgentState)
    graph.add_node("model", model)
    graph.add_node("child", run_child)
    graph.add_node("finish", finish)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", fan_out, ["child", "finish"])
    graph.add_edge("child", "model")
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=saver)


async def fanout_workload(path, children):
    manager, saver = await saver_at(path)
    app = lead_graph(saver, children)
    start = time.perf_counter()
    out = await app.ainvoke(
        {"messages": [{"role": "user", "text": "Collect the findings."}]},
        {"configurable": {"thread_id": "lead"}},
        durability="sync",
    )
    took = time.perf_counter() - start
    assert out["result"] == "all findings collected" and len(out["findings"]) == children, out.get("result")
    await manager.__aexit__(None, None, None)
    return took


# --- fork of a long conversation ----------------------------------------------------------


def talker_graph(saver):
    """After the conversation is built: one turn that finishes."""

    def model(state):
        turn = state.get("turn", 0) + 1
        return {"messages": [assistant(turn, [("finish", {"result": "checked"})])], "turn": turn}

    def tools(state):
        call = state["messages"][-1]["tool_calls"][0]
        return {"messages": [tool_result(call, json.dumps({"ending": "declared"}))], "result": "checked"}

    return agent_loop(model, tools, saver)


def conversation(messages):
    """About `messages` messages shaped as agentvisor's building turns: an assistant message
    of 99 write_note calls and their 99 results, repeated."""
    out = [{"role": "user", "text": "Talk for a long time, then fork."}]
    turns = max(1, messages // (CALLS_PER_BUILD_TURN + 1))
    for t in range(turns):
        calls = [("write_note", {"page": "log", "text": f"entry {t}.{i}"}) for i in range(CALLS_PER_BUILD_TURN)]
        message = assistant(t, calls)
        out.append(message)
        out.extend(tool_result(call, json.dumps({"page": "log", "bytes": 12})) for call in message["tool_calls"])
    return out


async def fork_workload(path, messages):
    manager, saver = await saver_at(path)
    app = talker_graph(saver)
    source = {"configurable": {"thread_id": "talker"}}
    # Built outside the time: the conversation as the thread's checkpoint.
    await app.aupdate_state(source, {"messages": conversation(messages)}, as_node="tools")
    start = time.perf_counter()
    # The fork: a branch from the conversation's checkpoint with the copy's prompt, and the
    # copy's one turn on it.
    snapshot = await app.aget_state(source)
    branch = await app.aupdate_state(
        snapshot.config, {"messages": [{"role": "note", "text": "Check the conversation."}]}, as_node="tools"
    )
    out = await app.ainvoke(None, branch, durability="sync")
    took = time.perf_counter() - start
    assert out["result"] == "checked" and len(out["messages"]) > messages, out.get("result")
    await manager.__aexit__(None, None, None)
    return took


def main():
    args = sys.argv[1:]
    workload = args[0] if args else ""
    number = lambda i, default: int(args[i]) if len(args) > i else default
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "checkpoints.sqlite")
        if workload == "turns":
            agents, turns = number(1, 200), number(2, 11)
            name, size, took = f"turns_{turns}", agents, asyncio.run(turns_workload(path, agents, turns))
        elif workload == "fanout":
            children = number(1, 1000)
            name, size, took = "fanout", children, asyncio.run(fanout_workload(path, children))
        elif workload == "fork":
            messages = number(1, 10_000)
            name, size, took = "fork", messages, asyncio.run(fork_workload(path, messages))
        else:
            raise SystemExit("usage: langgraph_side.py turns [AGENTS [TURNS]] | fanout [CHILDREN] | fork [MESSAGES]")
    print(json.dumps({"side": "langgraph", "workload": name, "size": size, "seconds": took}))


if __name__ == "__main__":
    main()
