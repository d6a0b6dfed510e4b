"""The journal: every config hash this agent has taken, and how far each got (pure).

An entry is written before its run is launched and never removed, so a hash
in the journal is never launched again by this agent, whatever it is offered
later or how often it restarts. The results themselves stay in the run
folders (:mod:`libs.agent.run_folder`); the journal holds only the states,
so rewriting it whole on each change stays cheap.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping
from typing import Any

FORMAT = 1


class State(enum.Enum):
    # Launched, or about to be: its run folder decides what happened.
    RUNNING = "running"
    # Its result is on disk; the signal is not delivered yet.
    FINISHED = "finished"
    # Delivered, or nothing to deliver (NO_SIGNAL).
    SIGNALLED = "signalled"
    # The signal failed past its attempts: logged and left.
    GAVE_UP = "gave_up"

    @property
    def settled(self) -> bool:
        return self in (State.SIGNALLED, State.GAVE_UP)


@dataclasses.dataclass(frozen=True)
class Entry:
    key: str
    config_id: str
    name: str
    group: str
    state: State
    # Unix times: when it was taken, and its last change.
    taken_at: float
    changed_at: float
    status_code: int | None = None


@dataclasses.dataclass(frozen=True)
class Journal:
    entries: Mapping[str, Entry] = dataclasses.field(default_factory=dict)

    def get(self, key: str) -> Entry | None:
        return self.entries.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)

    def taken(self, key: str, config_id: str, name: str, group: str, at: float) -> Journal:
        if key in self.entries:
            raise ValueError(f"config {key} was taken already")
        entry = Entry(key, config_id, name, group, State.RUNNING, at, at)
        return Journal({**self.entries, key: entry})

    def moved(self, key: str, state: State, at: float, status_code: int | None = None) -> Journal:
        """The entry of ``key`` in ``state`` (never back: a settled entry stays as it is)."""
        entry = self.entries[key]
        if entry.state.settled or _ORDER[state] < _ORDER[entry.state]:
            return self
        code = entry.status_code if status_code is None else status_code
        return Journal({**self.entries, key: dataclasses.replace(entry, state=state, changed_at=at,
                                                                 status_code=code)})

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "entries": [
            {**dataclasses.asdict(e), "state": e.state.value} for e in self.entries.values()]}

    @classmethod
    def from_json(cls, data: Any) -> Journal:
        if (not isinstance(data, dict) or data.get("format") != FORMAT
                or not isinstance(data.get("entries"), list)):
            raise ValueError("not a journal of this agent's format")
        entries = {}
        for raw in data["entries"]:
            entry = Entry(**{**raw, "state": State(raw["state"])})
            entries[entry.key] = entry
        return cls(entries)


_ORDER = {State.RUNNING: 0, State.FINISHED: 1, State.SIGNALLED: 2, State.GAVE_UP: 2}
