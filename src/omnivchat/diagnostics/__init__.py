"""Diagnostics: the modality ablation grid, the harness self-check and audio-track route checks."""

from omnivchat.diagnostics.ablation import CONDITIONS, FLAGS, METRICS, Diagnosis, diagnose

__all__ = ["CONDITIONS", "FLAGS", "METRICS", "Diagnosis", "diagnose"]
