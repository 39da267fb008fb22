"""SocialOmni (Who / When / How) on omnivchat's runner: loaders, cut-offs, prompt cards, strict parsing,
metrics, the three-judge panel, rescoring and exports. Protocol: SocialOmni's hosted-model evaluation runner
(its README and manifest format) and the SocialOmni paper's Who / When / How tasks.

- name: SocialOmni (Level 1 "Who", Level 2 "When" and "How")
- data: level_1/dataset.json (2,000 Who items), level_2/annotations_200.json (200 When items, 128 How)
- languages: English
"""

from omnivchat.socialomni._cards import PromptCards, how_text, load_cards, when_text, who_text
from omnivchat.socialomni._data import WhenItem, WhoItem, how_items, load_when, load_who
from omnivchat.socialomni._errors import SocialOmniError
from omnivchat.socialomni._files import (
    SOCIALOMNI_JUDGING_PROTOCOL,
    SOCIALOMNI_PROTOCOL,
    SocialOmniJudgingManifest,
    SocialOmniManifest,
    SocialOmniSummary,
)
from omnivchat.socialomni._metrics import (
    HowMetrics,
    classification_metrics,
    how_metrics,
)
from omnivchat.socialomni._panel import (
    DEFAULT_PANEL,
    PANELS,
    check_panel,
    load_judge_template,
    parse_judge_score,
)
from omnivchat.socialomni._parse import parse_how, parse_when, parse_when_lenient, parse_who, parse_who_lenient
from omnivchat.socialomni._run import (
    GENERATION,
    PROTOCOL,
    TASK_ORDER,
    ExportFigures,
    JudgingPass,
    candidate_records,
    estimate_judging,
    export_figures,
    item_meta,
    item_request,
    judge_run,
    judge_scores_for,
    load_tasks,
    prepare_from_archive,
    prepare_from_run,
    read_manifest,
    rescore,
    run_manifest,
    summarize,
    write_summary,
)
from omnivchat.socialomni._status import declared_items, judging_status
from omnivchat.socialomni._time import WHO_CUTOFF_RULE, seconds, who_cutoff

__all__ = [
    "DEFAULT_PANEL",
    "GENERATION",
    "PANELS",
    "PROTOCOL",
    "SOCIALOMNI_JUDGING_PROTOCOL",
    "SOCIALOMNI_PROTOCOL",
    "TASK_ORDER",
    "WHO_CUTOFF_RULE",
    "ExportFigures",
    "HowMetrics",
    "JudgingPass",
    "PromptCards",
    "SocialOmniError",
    "SocialOmniJudgingManifest",
    "SocialOmniManifest",
    "SocialOmniSummary",
    "WhenItem",
    "WhoItem",
    "candidate_records",
    "check_panel",
    "classification_metrics",
    "declared_items",
    "estimate_judging",
    "export_figures",
    "how_items",
    "how_metrics",
    "how_text",
    "item_meta",
    "item_request",
    "judge_run",
    "judge_scores_for",
    "judging_status",
    "load_cards",
    "load_judge_template",
    "load_tasks",
    "load_when",
    "load_who",
    "parse_how",
    "parse_judge_score",
    "parse_when",
    "parse_when_lenient",
    "parse_who",
    "parse_who_lenient",
    "prepare_from_archive",
    "prepare_from_run",
    "read_manifest",
    "rescore",
    "run_manifest",
    "seconds",
    "summarize",
    "when_text",
    "who_cutoff",
    "who_text",
    "write_summary",
]
