"""The GSPO objective of OmniVChat-RL (paper Section 4.1, Eq. 3), as a loss over per-token log-probabilities.

J(θ) = E[ 1/N Σ_i min( q_i A_i, clip(q_i, 1 - ε_lo, 1 + ε_hi) A_i ) ]   (Eq. 3)

with the length-normalised sequence ratio q_i = (π_θ(y_i|x) / π_θold(y_i|x))^(1/|y_i|) = exp(mean over the reply's
tokens of log π_θ - log π_θold), the group-mean advantage A_i = R(y_i) - mean_G R (no std normalisation), and the
paper's clip range (ε_lo, ε_hi) = (2e-4, 4e-4) (Table 4). The engines compute the same objective themselves (TRL:
``importance_sampling_level="sequence"`` with ``loss_type="grpo"``; verl: ``policy_loss.loss_mode=gspo``); this
function is the reference the tests and a custom trainer can use. torch loads only when it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

EPS_LOW = 2e-4
"""ε_lo of Eq. 3 (Table 4: clip range (2, 4) × 10⁻⁴)."""
EPS_HIGH = 4e-4
"""ε_hi of Eq. 3."""


def gspo_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps_low: float = EPS_LOW,
    eps_high: float = EPS_HIGH,
) -> torch.Tensor:
    """-J(θ) of Eq. 3 for one batch: a scalar to minimise.

    ``logp_new`` (batch, tokens): log π_θ of each sampled token, with gradient; ``logp_old`` (batch, tokens):
    log π_θold of the same tokens (treated as a constant: no gradient flows into it); ``advantages`` (batch,) or
    (batch, 1): one A_i per reply (a constant); ``mask`` (batch, tokens): 1 for a reply token, 0 for padding and
    the prompt (masked positions are ignored whatever they hold, -inf included).

    q_i = exp(Σ_t m_it (logp_new - logp_old) / Σ_t m_it); the term is min(q_i A_i, clip(q_i, 1 - eps_low,
    1 + eps_high) A_i); the loss is minus the mean of the terms over the N replies of the batch.

    A reply with no token (an all-zero mask row) has no q_i: its term is 0, with no gradient, and it still counts
    in N. This is what TRL's ``loss_type="grpo"`` at sequence level gives such a row, so both report the same
    loss. Raises ValueError on mismatched shapes, a non-binary mask or a clip range outside [0, 1) x [0, inf).
    """
    import torch

    if not 0.0 <= eps_low < 1.0 or not eps_high >= 0.0:
        raise ValueError(f"clip range needs 0 <= eps_low < 1 and eps_high >= 0, got ({eps_low}, {eps_high})")
    if logp_new.dim() != 2:
        raise ValueError(f"logp_new must be (batch, tokens), got shape {tuple(logp_new.shape)}")
    if logp_old.shape != logp_new.shape or mask.shape != logp_new.shape:
        raise ValueError(
            f"logp_new {tuple(logp_new.shape)}, logp_old {tuple(logp_old.shape)} and mask {tuple(mask.shape)} "
            "must have the same (batch, tokens) shape"
        )
    batch = logp_new.shape[0]
    if advantages.dim() == 2 and advantages.shape[1] == 1:
        advantages = advantages.squeeze(1)
    if advantages.shape != (batch,):
        raise ValueError(f"advantages must be one per reply, (batch,) = ({batch},), got {tuple(advantages.shape)}")
    keep = mask.bool()
    if not torch.equal(keep.to(mask.dtype), mask):
        raise ValueError("mask must hold only 0 and 1")

    # Σ_t m_it (log π_θ - log π_θold) over reply tokens only: `where`, not a product, so that a masked -inf or NaN
    # (padding) neither leaks into the sum nor into the gradient.
    log_ratio = torch.where(keep, logp_new - logp_old.detach(), torch.zeros_like(logp_new))
    lengths = keep.sum(dim=-1)
    mean_log_ratio = log_ratio.sum(dim=-1) / lengths.clamp(min=1).to(logp_new.dtype)
    ratio = torch.exp(mean_log_ratio)  # q_i of Eq. 3
    adv = advantages.detach().to(logp_new.dtype)
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    terms = torch.minimum(ratio * adv, clipped * adv)
    terms = torch.where(lengths > 0, terms, torch.zeros_like(terms))
    return -terms.mean()
