"""The prefix gate: followers of a long prefix wait for its leader (asyncio events, no clocks)."""

from __future__ import annotations

import asyncio

from rt4chart.transforms.judges.openai.prefix_gate import (
    GateConfig,
    PrefixGate,
    mark_sent,
    prefix_of,
)

LONG = 5000  # estimated prefix tokens: cacheable


class Calls:
    """Calls through a gate whose "provider" answers when the test says so."""

    def __init__(self, gate: PrefixGate):
        self.gate = gate
        self.started: list[str] = []
        self.answer: dict[str, asyncio.Event] = {}

    async def call(self, name: str, key: str | None, tokens: int = LONG,
                   sends: bool = True) -> str:
        self.answer[name] = asyncio.Event()
        async with self.gate.turn(key, tokens):
            if sends:
                mark_sent()
            self.started.append(name)
            await self.answer[name].wait()
        return name


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_followers_wait_for_the_leader_then_go_together():
    async def scenario() -> None:
        calls = Calls(PrefixGate(GateConfig(timeout_s=3600)))
        tasks = [asyncio.create_task(calls.call(f"c{i}", "window-1")) for i in range(4)]
        other = asyncio.create_task(calls.call("x", "window-2"))
        await settle()
        assert calls.started == ["c0", "x"]  # one leader per prefix
        calls.answer["x"].set()
        await settle()
        assert calls.started == ["c0", "x"]  # window-1's followers still wait for c0
        calls.answer["c0"].set()
        await settle()
        assert sorted(calls.started[2:]) == ["c1", "c2", "c3"]
        late = asyncio.create_task(calls.call("c4", "window-1"))
        await settle()
        assert calls.started[-1] == "c4"  # the prefix is cached: no wait
        for event in calls.answer.values():
            event.set()
        await asyncio.gather(*tasks, other, late)
        assert calls.gate.figures() == {"leaders": 2, "held": 3, "timeouts": 0,
                                        "passed_warm": 1}

    asyncio.run(scenario())


def test_short_or_unshared_prefixes_are_never_held():
    async def scenario() -> None:
        calls = Calls(PrefixGate())
        tasks = [asyncio.create_task(calls.call(f"s{i}", "short", tokens=500)) for i in range(3)]
        tasks += [asyncio.create_task(calls.call(f"n{i}", None)) for i in range(2)]
        await settle()
        assert sorted(calls.started) == ["n0", "n1", "s0", "s1", "s2"]
        for event in calls.answer.values():
            event.set()
        await asyncio.gather(*tasks)
        off = Calls(PrefixGate(GateConfig(enabled=False)))
        tasks = [asyncio.create_task(off.call(f"o{i}", "window")) for i in range(3)]
        await settle()
        assert len(off.started) == 3
        for event in off.answer.values():
            event.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_followers_go_after_the_timeout_counted_from_the_leaders_send():
    async def scenario() -> None:
        calls = Calls(PrefixGate(GateConfig(timeout_s=0.0)))
        # A leader still queued (not sent): followers wait, whatever the timeout.
        leader = asyncio.create_task(calls.call("lead", "w", sends=False))
        followers = [asyncio.create_task(calls.call(f"f{i}", "w")) for i in range(2)]
        await settle()
        assert calls.started == ["lead"]
        calls.gate._prefixes["w"].sent.set()  # what mark_sent() does for the leader
        await settle()
        assert sorted(calls.started) == ["f0", "f1", "lead"]  # released though lead runs on
        assert calls.gate.timeouts == 2
        for event in calls.answer.values():
            event.set()
        await asyncio.gather(leader, *followers)

    asyncio.run(scenario())


def test_a_failed_leader_releases_its_followers():
    async def scenario() -> None:
        gate = PrefixGate(GateConfig(timeout_s=3600))
        started: list[str] = []
        fail = asyncio.Event()

        async def leader() -> None:
            async with gate.turn("w", LONG):
                await fail.wait()
                raise RuntimeError("endpoint down")

        async def follower(name: str) -> None:
            async with gate.turn("w", LONG):
                started.append(name)

        lead = asyncio.create_task(leader())
        await settle()
        rest = [asyncio.create_task(follower(f"f{i}")) for i in range(2)]
        await settle()
        assert started == []
        fail.set()
        results = await asyncio.gather(lead, *rest, return_exceptions=True)
        assert isinstance(results[0], RuntimeError) and started == ["f0", "f1"]

    asyncio.run(scenario())


def test_prefix_of_names_the_prompt_up_to_the_shared_text():
    system = "instructions " * 100
    a, tokens = prefix_of(system, "<passage>\nW\n</passage>\n<claim>\none\n</claim>", "W")
    b, _ = prefix_of(system, "<passage>\nW\n</passage>\n<claim>\ntwo\n</claim>", "W")
    c, _ = prefix_of("other " + system, "<passage>\nW\n</passage>\n<claim>\none\n</claim>", "W")
    assert a == b != c
    assert tokens == (len(system) + len("<passage>\nW")) // 4
    assert prefix_of(system, "no shared text", "W") == (None, 0)
    assert prefix_of(system, "anything", None) == (None, 0)
