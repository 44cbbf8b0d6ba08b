"""Agent traces written by real frameworks (issue 50): a LangGraph ReAct agent and a LlamaIndex
FunctionAgent, each with its framework's own fake model, instrumented with OpenInference and
exporting real spans through the OpenTelemetry SDK to an OTLP JSON lines file
(`otlp_file_exporter`), as an instrumented application's Collector would write them.

The fake models (LangChain's `GenericFakeChatModel`, LlamaIndex's `MockFunctionCallingLLM`)
replay a scripted tool call, then a scripted answer; the tools are real functions the agent
calls. Every case, session and tool result here is written for these tests.

- `CASES`: ten single-turn traces (five per framework): five faithful answers that restate the
  tool's result, five that add a fact no tool returned. The trace id is the case id
  (`--trace-id-attribute metadata.case`).
- `SESSION`: a three-turn LangGraph conversation (one session id): the first answer adds a fact
  (a free wallbox) no tool returned; the second restates the model year the user gave in the
  first turn (the user's setting, "2019"); the third repeats the first answer's wallbox, which
  only the assistant ever said.

`python agent_traces.py OUT.jsonl` writes them all.
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from otlp_file_exporter import file_tracer_provider

CASE_ATTRIBUTE = "metadata.case"


@dataclass(frozen=True)
class Case:
    case_id: str
    framework: str  # "langgraph" or "llamaindex"
    question: str
    tool: str
    arguments: dict
    result: str | dict  # what the tool returns
    answer: str
    faithful: bool


def _cases() -> tuple[Case, ...]:
    order = "Order A17 has shipped with DHL. It left the Leipzig hub on Monday."
    weather = {"city": "Berlin", "forecast": "Rain in Berlin on Friday.", "high_c": 12}
    flight = "Flight LH 402 departs from gate B22. Boarding starts at 14:10."
    refund = "The refund of 49 euros for order C3 was approved on March 3."
    stock = {"sku": "K-9", "summary": "The K-9 kettle is in stock in the Hamburg store."}
    return (
        Case("lg-order-ok", "langgraph", "Where is my order A17?", "get_order_status",
             {"order_id": "A17"}, order, "Order A17 has shipped with DHL.", True),
        Case("lg-order-add", "langgraph", "Where is my order A17?", "get_order_status",
             {"order_id": "A17"}, order,
             "Order A17 has shipped with DHL. It will arrive tomorrow before noon.", False),
        Case("lg-weather-ok", "langgraph", "Will it rain in Berlin on Friday?", "get_weather",
             {"city": "Berlin"}, weather, "Rain in Berlin on Friday.", True),
        Case("lg-flight-add", "langgraph", "Where does LH 402 board?", "get_flight",
             {"flight": "LH 402"}, flight,
             "Flight LH 402 departs from gate B22. The flight is delayed by two hours.", False),
        Case("lg-refund-ok", "langgraph", "Was my refund for C3 approved?", "get_refund",
             {"order_id": "C3"}, refund,
             "The refund of 49 euros for order C3 was approved on March 3.", True),
        Case("li-order-ok", "llamaindex", "Where is my order A17?", "get_order_status",
             {"order_id": "A17"}, order, "It left the Leipzig hub on Monday.", True),
        Case("li-stock-add", "llamaindex", "Is the K-9 kettle in stock?", "get_stock",
             {"sku": "K-9"}, stock,
             "The K-9 kettle is in stock in the Hamburg store. It is on sale for 20 euros.",
             False),
        Case("li-flight-ok", "llamaindex", "Where does LH 402 board?", "get_flight",
             {"flight": "LH 402"}, flight, "Flight LH 402 departs from gate B22.", True),
        Case("li-refund-add", "llamaindex", "Was my refund for C3 approved?", "get_refund",
             {"order_id": "C3"}, refund, "The refund of 60 euros for order C3 was approved.",
             False),
        Case("li-weather-add", "llamaindex", "Will it rain in Berlin on Friday?", "get_weather",
             {"city": "Berlin"}, weather,
             "Rain in Berlin on Friday. Snow is expected on Saturday.", False),
    )


CASES = _cases()


@dataclass(frozen=True)
class Turn:
    case_id: str
    question: str
    tool: str
    result: str
    answer: str


SESSION_ID = "kona-session"
# The model year only the user gave (turn 1), the wallbox only the assistant said (turn 1).
PREMISE_VALUE, ASSISTANT_ONLY = "2019", "free home wallbox"
SESSION = (
    Turn("session-1", "I have a 2019 Kona Electric. How far can it go on a full charge?",
         "get_vehicle_specs", "The Kona Electric has a range of 484 km on a full charge.",
         "The Kona Electric has a range of 484 km on a full charge. "
         "It also comes with a free home wallbox."),
    Turn("session-2", "And how long does charging take?", "get_charging_time",
         "The Kona Electric charges from 10 to 80 percent in 47 minutes at a fast charger.",
         "Your 2019 Kona Electric charges from 10 to 80 percent in 47 minutes at a fast "
         "charger."),
    Turn("session-3", "Does it come with anything else?", "get_vehicle_specs",
         "The Kona Electric comes with a charging cable for household sockets.",
         "It comes with a free home wallbox."),
)


def _langgraph_tools(names: dict[str, str | dict]):
    from langchain_core.tools import StructuredTool

    def make(name: str, value: str | dict):
        def run(**_: str) -> str:
            return value if isinstance(value, str) else json.dumps(value)
        return StructuredTool.from_function(
            run, name=name, description=f"Look up {name}.",
            args_schema={"type": "object", "properties": {"query": {"type": "string"}}})
    return [make(name, value) for name, value in names.items()]


def _fake_chat_model(replies: list):
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class ToolCallingFake(GenericFakeChatModel):
        """LangChain's fake chat model, taking the tools as a tool-calling model does."""

        def bind_tools(self, tools, **kwargs):
            return self

    return ToolCallingFake(messages=iter(replies))


def _langgraph_run(case: Case | Turn, call_id: str, agent_of, config: dict) -> None:
    from langchain_core.messages import AIMessage

    replies = [AIMessage(content="", tool_calls=[
        {"name": case.tool, "args": {"query": case.question}, "id": call_id}]),
        AIMessage(content=case.answer)]
    agent = agent_of(_fake_chat_model(replies), case)
    agent.invoke({"messages": [("user", case.question)]},
                 {**config, "metadata": {"case": case.case_id}})


def run_langgraph(cases: list[Case]) -> None:
    from langgraph.prebuilt import create_react_agent

    for case in cases:
        _langgraph_run(case, f"call_{case.case_id}", lambda model, c: create_react_agent(
            model, _langgraph_tools({c.tool: c.result})), {})


def run_session(turns: tuple[Turn, ...] = SESSION) -> None:
    """The turns as one LangGraph conversation: a checkpointer keeps its messages, the
    thread id is the session id (OpenInference's `session.id`)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    memory = InMemorySaver()
    for i, turn in enumerate(turns):
        _langgraph_run(turn, f"call_{i + 1}", lambda model, t: create_react_agent(
            model, _langgraph_tools({t.tool: t.result}), checkpointer=memory),
            {"configurable": {"thread_id": SESSION_ID}})


def _returning(value: str | dict):
    def lookup(query: str) -> str | dict:
        return value
    return lookup


def run_llamaindex(cases: list[Case]) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.core.llms import ChatMessage, MessageRole
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.tools import FunctionTool
    from openinference.instrumentation import using_metadata

    for case in cases:
        def reply(messages, _case=case, **_):
            if any(m.role == MessageRole.TOOL for m in messages):
                return ChatMessage(role="assistant", content=_case.answer)
            return ChatMessage(role="assistant", blocks=[ToolCallBlock(
                tool_call_id=f"call_{_case.case_id}", tool_name=_case.tool,
                tool_kwargs={"query": _case.question})])

        tool = FunctionTool.from_defaults(_returning(case.result), name=case.tool,
                                          description=f"Look up {case.tool}.")
        agent = FunctionAgent(tools=[tool], llm=MockFunctionCallingLLM(response_generator=reply),
                              streaming=False)

        async def run(_agent=agent, _case=case):
            with using_metadata({"case": _case.case_id}):
                return await _agent.run(user_msg=_case.question)

        asyncio.run(run())


def write(path: Path, cases: tuple[Case, ...] = CASES, session: bool = True) -> Path:
    """Runs the agents with OpenInference's instrumentors on, their spans to `path`; the
    instrumentors are switched off again after."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    provider = file_tracer_provider(path, service="support-agent")
    instrumentors = (LangChainInstrumentor(), LlamaIndexInstrumentor())
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
            run_langgraph([c for c in cases if c.framework == "langgraph"])
            run_llamaindex([c for c in cases if c.framework == "llamaindex"])
            if session:
                run_session()
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
        provider.shutdown()
    return path


def plain_records(cases: tuple[Case, ...] = CASES) -> list[dict]:
    """The same answers as rt4chart's own records, the tool result as a context naming its
    tool and call: what a team writes by hand today."""
    return [{"trace_id": c.case_id, "route": c.framework, "question": c.question,
             "timestamp": "2026-12-01T10:00:00Z", "answer": c.answer,
             "contexts": [{"tool": c.tool, "call_id": f"call_{c.case_id}", "text": c.result}]}
            for c in cases]


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
