"""The agent: configs offered by the sources are planned against the journal, run one at a time, signalled.

Runs go one after another in the order offered, as heat-config runs them
(a config may count on an earlier one's work); signals go out beside them.
Each run is recorded in the journal before its runner starts and again when
its outcome is in, and each signal when it is delivered or given up; the
journal is written whole each time, so a kill at any point leaves a state
that the next start finishes from without running anything twice.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp

from libs.agent import atomic_files, configs, plan, run_folder, sources
from libs.agent.configs import DerivedConfig
from libs.agent.credentials import Tokens
from libs.agent.hook_registry import Hooks
from libs.agent.journal import Journal, State
from libs.agent.settings import AgentSettings
from libs.agent.signaller import Signaller
from libs.agent.workdir import Workdir
from libs.telemetry import logs

log = logs.logger("agent")


class Agent:
    def __init__(self, settings: AgentSettings, workdir: Workdir, signaller: Signaller) -> None:
        self._settings = settings
        self._workdir = workdir
        self._signaller = signaller
        self._hooks = Hooks(settings.hooks_dir)
        self.journal: Journal = workdir.load_journal()
        # Keys with a step queued or under way in this process.
        self._busy: set[str] = set()
        self._runs: asyncio.Queue[plan.Start | plan.Resume] = asyncio.Queue()
        self._deliveries: set[asyncio.Task[None]] = set()
        # Skips already logged, so a config polled every interval is named once.
        self._told: set[tuple[str, str]] = set()

    def offer(self, items: list[Any], source: str) -> None:
        """Take a source's whole list: plan it against the journal and set the steps going."""
        offered = [configs.parse(item) for item in items]
        groups = {c.group for c in offered if isinstance(c, DerivedConfig)}
        steps = plan.plan(offered, self.journal, frozenset(self._busy), self._hooks.available(groups))
        for step in steps:
            if isinstance(step, plan.Skip):
                self._tell_skip(step, source)
            elif isinstance(step, plan.Deliver):
                self._busy.add(step.key)
                self._deliver_soon(step.key)
            else:
                self._busy.add(step.config.key if isinstance(step, plan.Start) else step.key)
                self._runs.put_nowait(step)

    def _tell_skip(self, step: plan.Skip, source: str) -> None:
        if (step.label, step.detail) in self._told:
            return
        self._told.add((step.label, step.detail))
        quiet = step.reason is plan.SkipReason.NO_HOOK_EXPECTED
        (log.info if quiet else log.error)("skipping a config", extra={
            "config": step.label, "reason": step.reason.value, "detail": step.detail, "source": source})

    def _record(self, journal: Journal) -> None:
        self._workdir.save_journal(journal)
        self.journal = journal

    async def work(self) -> None:
        """Run what is queued, one at a time, for ever."""
        while True:
            step = await self._runs.get()
            key = step.config.key if isinstance(step, plan.Start) else step.key
            folder = self._workdir.run(key)
            if isinstance(step, plan.Start):
                config = step.config
                # The folder first: a journal entry always has its config on disk to run from.
                folder.prepare(dict(config.document))
                self._record(self.journal.taken(key, config.id, config.name, config.group, time.time()))
                log.debug("run starting", extra={"key": key, "config": config.name, "group": config.group,
                                                 "config_id": config.id})
            elif not folder.config.exists():
                log.error("cannot resume a run: its folder is gone", extra={"key": key})
                self._settle(key, State.GAVE_UP)
                continue
            argv = run_folder.runner_argv(folder, self._settings.timeout, self._settings.user,
                                          self._settings.hooks_dir)
            outcome = await run_folder.collect(folder, argv)
            self._record(self.journal.moved(key, State.FINISHED, time.time(), outcome.status_code))
            entry = self.journal.get(key)
            log.info("run finished", extra={
                "key": key, "config": entry.name if entry else None, "group": entry.group if entry else None,
                "status_code": outcome.status_code, "timed_out": outcome.timed_out,
                "seconds": round(outcome.finished_at - outcome.started_at, 3)})
            self._deliver_soon(key)

    def _settle(self, key: str, state: State) -> None:
        self._record(self.journal.moved(key, state, time.time()))
        self._busy.discard(key)

    def _deliver_soon(self, key: str) -> None:
        task = asyncio.create_task(self._deliver(key), name=f"deliver {key}")
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)

    async def _deliver(self, key: str) -> None:
        folder = self._workdir.run(key)
        outcome = folder.outcome()
        try:
            config = configs.parse(atomic_files.read_json(folder.config))
        except FileNotFoundError:
            config = configs.Refused(configs.Refusal.MALFORMED, "its run folder has no config", key)
        if outcome is None or isinstance(config, configs.Refused):
            log.error("cannot signal a run: its folder lacks its config or outcome", extra={"key": key})
            self._settle(key, State.GAVE_UP)
            return
        try:
            delivery = await self._signaller.deliver(config, outcome.result)
        except Exception:
            # A fault of the agent's own (the signaller's errors are answers): given up, not retried
            # on every poll for ever.
            log.exception("signal failed", extra={"key": key, "config": config.name})
            self._settle(key, State.GAVE_UP)
            return
        self._settle(key, State.SIGNALLED if delivery.delivered else State.GAVE_UP)
        (log.info if delivery.delivered else log.error)(
            "signal delivered" if delivery.delivered else "signal given up", extra={
                "key": key, "config": config.name, "attempts": delivery.attempts, "detail": delivery.detail})

    async def close(self) -> None:
        """Stop the signals under way (the journal has them as unsent: the next start sends them)."""
        for task in list(self._deliveries):
            task.cancel()
        await asyncio.gather(*self._deliveries, return_exceptions=True)


async def serve(settings: AgentSettings, stop: asyncio.Event) -> None:
    """Run the agent until ``stop`` is set; runs under way go on without it.

    What the last agent left unfinished is planned before the first poll.
    A part that fails (a full disk under the journal) ends the agent with its
    error, for its supervisor to start it again.
    """
    workdir = Workdir(settings.workdir)
    workdir.open()
    try:
        async with aiohttp.ClientSession() as session:
            agent = Agent(settings, workdir, Signaller(session, settings))
            agent.offer([], "journal")
            tokens = Tokens(session, settings)
            parts = [asyncio.create_task(agent.work(), name="runs"),
                     asyncio.create_task(sources.poll(session, settings, tokens, agent.offer), name="poll"),
                     asyncio.create_task(sources.listen(settings, agent.offer), name="push")]
            stopping = asyncio.create_task(stop.wait(), name="stop")
            pending: set[asyncio.Task[Any]] = {*parts, stopping}
            try:
                while not stopping.done():
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    failed = next((p.exception() for p in done if p is not stopping and p.exception()), None)
                    if failed is not None:
                        raise failed
            finally:
                for task in (*parts, stopping):
                    task.cancel()
                await asyncio.gather(*parts, stopping, return_exceptions=True)
                await agent.close()
    finally:
        workdir.close()
