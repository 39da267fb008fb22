"""The GSPO loss of Eq. 3 against numbers worked by hand: the sequence ratio, the asymmetric clip, the gradient
(only through logp_new, only on unclipped replies, only on reply tokens), masking and an empty reply."""

from __future__ import annotations

import importlib.util
import math

import pytest

from omnivchat.rl.gspo import EPS_HIGH, EPS_LOW, gspo_loss

INSTALL = "the `rl` install step of .ci/run (a CPU torch wheel, then trl and peft; docs/rl.md, CPU smoke run)"


@pytest.fixture(scope="module", autouse=True)
def _torch() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip(f"torch is not installed: run {INSTALL}")


def batch():
    """Four replies of 3 token slots; the third slot of reply 1 is padding (holding -inf, which must not matter).

    Per-token log-ratios (new - old) and advantages, chosen so that each reply lands in a different case:
      reply 1: +0.0003, -0.0001 (2 tokens)  mean +0.0001  q = e^0.0001  = 1.000100005   A = +1  inside the range
      reply 2: +0.003 x 3                   mean +0.003   q = e^0.003   = 1.0030045     A = +2  above 1 + 4e-4
      reply 3: -0.001 x 3                   mean -0.001   q = e^-0.001  = 0.9990005     A = -1  below 1 - 2e-4
      reply 4: +0.001 x 3                   mean +0.001   q = e^0.001   = 1.0010005     A = -1  above, A < 0
    """
    import torch

    f64 = torch.float64  # float32 would round the small log-ratios off the hand numbers
    old = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -1.5, -2.5], [-1.2, -0.7, -0.9], [-2.0, -1.0, -0.3]], dtype=f64)
    ratio = torch.tensor([[3e-4, -1e-4, 0.0], [3e-3] * 3, [-1e-3] * 3, [1e-3] * 3], dtype=f64)
    new = (old + ratio).clone()
    new[0, 2] = -math.inf
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 1, 1], [1, 1, 1]])
    advantages = torch.tensor([1.0, 2.0, -1.0, -1.0], dtype=f64)
    return new.requires_grad_(True), old.requires_grad_(True), advantages, mask


def by_hand() -> tuple[list[float], list[float]]:
    """Each reply's term min(q A, clip(q) A) and q itself, with the clip range [1 - 2e-4, 1 + 4e-4]:
    reply 1 unclipped (q A); reply 2 q A = 2.006 > 1.0004 x 2 = 2.0008, so the clipped 2.0008;
    reply 3 q A = -0.9990 > -0.9998 = clip A, so the clipped -0.9998; reply 4 q A = -1.0010 < -1.0004, so q A."""
    q = [math.exp(1e-4), math.exp(3e-3), math.exp(-1e-3), math.exp(1e-3)]
    terms = [q[0] * 1.0, 1.0004 * 2.0, 0.9998 * -1.0, q[3] * -1.0]
    return terms, q


def test_loss_matches_the_hand_computation() -> None:
    new, old, advantages, mask = batch()
    loss = gspo_loss(new, old, advantages, mask)
    terms, _ = by_hand()
    assert loss.item() == pytest.approx(-sum(terms) / 4, rel=1e-12)
    # the numbers themselves, rounded: -(1.000100005 + 2.0008 - 0.9998 - 1.0010005) / 4 = -1.0000995 / 4
    assert loss.item() == pytest.approx(-0.2500248762, abs=1e-10)


def test_gradient_flows_only_through_logp_new_and_only_where_unclipped() -> None:
    new, old, advantages, mask = batch()
    advantages.requires_grad_(True)
    gspo_loss(new, old, advantages, mask).backward()
    assert old.grad is None and advantages.grad is None
    _, q = by_hand()
    # d(-1/N q_i A_i)/d logp_new_it = -(1/N) A_i q_i / |y_i| on reply tokens of unclipped replies, else 0
    expected = [
        [-(1 / 4) * 1.0 * q[0] / 2, -(1 / 4) * 1.0 * q[0] / 2, 0.0],  # the padding slot gets nothing
        [0.0, 0.0, 0.0],  # clipped: no gradient
        [0.0, 0.0, 0.0],  # clipped: no gradient
        [(1 / 4) * q[3] / 3] * 3,
    ]
    assert new.grad is not None
    for row, want in zip(new.grad.tolist(), expected, strict=True):
        assert row == pytest.approx(want, rel=1e-9, abs=1e-15)


def test_masked_tokens_are_ignored_whatever_they_hold() -> None:
    import torch

    new, old, advantages, mask = batch()
    base = gspo_loss(new, old, advantages, mask).item()
    noisy_new, noisy_old = new.detach().clone(), old.detach().clone()
    noisy_new[0, 2], noisy_old[0, 2] = math.nan, 123.0
    assert gspo_loss(noisy_new, noisy_old, advantages, mask).item() == pytest.approx(base, rel=1e-12)
    assert torch.isfinite(gspo_loss(noisy_new, noisy_old, advantages, mask))


def test_an_empty_reply_contributes_zero_and_still_counts_in_n() -> None:
    import torch

    new, old, advantages, mask = batch()
    mask = mask.clone()
    mask[1] = 0  # reply 2 has no token
    loss = gspo_loss(new, old, advantages, mask)
    terms, _ = by_hand()
    assert loss.item() == pytest.approx(-(terms[0] + terms[2] + terms[3]) / 4, rel=1e-12)
    loss.backward()
    assert new.grad is not None and torch.all(new.grad[1] == 0) and torch.isfinite(new.grad).all()
    everything_empty = gspo_loss(new, old, advantages, torch.zeros_like(mask))
    assert everything_empty.item() == 0.0


def test_on_policy_the_ratio_is_one_and_the_loss_is_minus_the_mean_advantage() -> None:
    import torch

    logp = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    advantages = torch.tensor([0.5, -0.25, 1.0], dtype=torch.float64)
    loss = gspo_loss(logp, logp.clone(), advantages, torch.ones(3, 5))
    assert loss.item() == pytest.approx(-advantages.mean().item(), rel=1e-12)
    assert (EPS_LOW, EPS_HIGH) == (2e-4, 4e-4)  # Table 4


def test_advantages_as_a_column_and_bad_inputs() -> None:
    new, old, advantages, mask = batch()
    assert gspo_loss(new, old, advantages[:, None], mask).item() == gspo_loss(new, old, advantages, mask).item()
    with pytest.raises(ValueError, match="same"):
        gspo_loss(new, old[:, :2], advantages, mask)
    with pytest.raises(ValueError, match="one per reply"):
        gspo_loss(new, old, advantages[:3], mask)
    with pytest.raises(ValueError, match="only 0 and 1"):
        gspo_loss(new, old, advantages, mask * 2)
    with pytest.raises(ValueError, match="clip range"):
        gspo_loss(new, old, advantages, mask, eps_low=1.0)
    with pytest.raises(ValueError, match=r"\(batch, tokens\)"):
        gspo_loss(new[0], old[0], advantages, mask[0])
