"""Pure scoring maths: gated rubric score (Eq. 1), means (Eq. 2), w(y), Reply Efficiency, style, Table 1, Table 3
(single-turn subcategories against their multi-turn extensions) and paired statistics. The resampling estimators
(seeded bootstraps, the clustered standard error) are in :mod:`omnivchat.scoring.statistics`."""

from omnivchat.scoring._aggregate import (
    TABLE1_COLUMNS,
    ScoredReply,
    Table1Row,
    category_means,
    mean_length,
    pooled_mean,
    style_rate,
    subcategory_mean,
    table1_row,
    turn_kind_means,
    unscored_subcategories,
)
from omnivchat.scoring._paired import (
    ALPHA as PAIRED_ALPHA,
)
from omnivchat.scoring._paired import (
    BOOTSTRAP_RESAMPLES as PAIRED_BOOTSTRAP_RESAMPLES,
)
from omnivchat.scoring._paired import (
    LEVEL as PAIRED_LEVEL,
)
from omnivchat.scoring._paired import (
    PERMUTATION_RESAMPLES as PAIRED_PERMUTATION_RESAMPLES,
)
from omnivchat.scoring._paired import (
    SEED as PAIRED_SEED,
)
from omnivchat.scoring._paired import (
    Correlation,
    PairedComparison,
    SignFlipTest,
    TTest,
    compare_paired,
    correlation,
    interval_note,
    mean_interval,
    paired_t_test,
    sign_flip_test,
)
from omnivchat.scoring._rubric import rubric_score
from omnivchat.scoring._table3 import ExtensionRow, SideMean, Table3, table3
from omnivchat.scoring._words import is_empty_reply, reply_efficiency, word_count

__all__ = [
    "PAIRED_ALPHA",
    "PAIRED_BOOTSTRAP_RESAMPLES",
    "PAIRED_LEVEL",
    "PAIRED_PERMUTATION_RESAMPLES",
    "PAIRED_SEED",
    "TABLE1_COLUMNS",
    "Correlation",
    "ExtensionRow",
    "PairedComparison",
    "ScoredReply",
    "SideMean",
    "SignFlipTest",
    "TTest",
    "Table1Row",
    "Table3",
    "category_means",
    "compare_paired",
    "correlation",
    "interval_note",
    "is_empty_reply",
    "mean_interval",
    "mean_length",
    "paired_t_test",
    "pooled_mean",
    "reply_efficiency",
    "rubric_score",
    "sign_flip_test",
    "style_rate",
    "subcategory_mean",
    "table1_row",
    "table3",
    "turn_kind_means",
    "unscored_subcategories",
    "word_count",
]
