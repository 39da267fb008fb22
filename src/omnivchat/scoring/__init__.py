"""Pure scoring maths: gated rubric score (Eq. 1), means (Eq. 2), w(y), Reply Efficiency, style, Table 1."""

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
)
from omnivchat.scoring._rubric import rubric_score
from omnivchat.scoring._words import is_empty_reply, reply_efficiency, word_count

__all__ = [
    "TABLE1_COLUMNS",
    "ScoredReply",
    "Table1Row",
    "category_means",
    "is_empty_reply",
    "mean_length",
    "pooled_mean",
    "reply_efficiency",
    "rubric_score",
    "style_rate",
    "subcategory_mean",
    "table1_row",
    "turn_kind_means",
    "word_count",
]
