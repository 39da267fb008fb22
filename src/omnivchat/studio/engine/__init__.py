"""The Studio engine (paper, Section 2 and Appendix C): the agents as interfaces, the single-turn (modules 0-14)
and multi-turn (modules a-n) state machines with bounded repair, per-instance traces, and the synthesis run that
writes a bench directory. See docs/studio.md, "The engine"."""

from omnivchat.studio.engine._agents import Agents, Director, DirectorRequest, Renderer, RenderRequest, Reviewer
from omnivchat.studio.engine._calls import AgentCallError, AgentCalls
from omnivchat.studio.engine._pipeline import Budgets, Job, Result, Synthesis
from omnivchat.studio.engine._run import (
    StudioError,
    StudioManifest,
    Summary,
    find_trace,
    load_corpus,
    plan_jobs,
    read_trace,
    studio_run,
)
from omnivchat.studio.engine._trace import MULTI_TURN_MODULES, SINGLE_TURN_MODULES, Step, Trace, trace_table
from omnivchat.studio.engine._types import (
    Answer,
    Aspect,
    Assignment,
    Caption,
    Clip,
    Decision,
    MediaReference,
    Passage,
    QualityReport,
    Question,
    Script,
    Segment,
    Violation,
)

__all__ = [
    "MULTI_TURN_MODULES",
    "SINGLE_TURN_MODULES",
    "AgentCallError",
    "AgentCalls",
    "Agents",
    "Answer",
    "Aspect",
    "Assignment",
    "Budgets",
    "Caption",
    "Clip",
    "Decision",
    "Director",
    "DirectorRequest",
    "Job",
    "MediaReference",
    "Passage",
    "QualityReport",
    "Question",
    "RenderRequest",
    "Renderer",
    "Result",
    "Reviewer",
    "Script",
    "Segment",
    "Step",
    "StudioError",
    "StudioManifest",
    "Summary",
    "Synthesis",
    "Trace",
    "Violation",
    "find_trace",
    "load_corpus",
    "plan_jobs",
    "read_trace",
    "studio_run",
    "trace_table",
]
