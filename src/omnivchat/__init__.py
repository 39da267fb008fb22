"""omnivchat: native audio-visual dialogue with omni models."""

__version__ = "0.1.0"
