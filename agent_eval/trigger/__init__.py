"""Adaptive evaluation triggers: evaluate when performance moves or a window has passed."""

from agent_eval.trigger.adaptive import (
    AdaptiveTrigger,
    Decision,
    Reason,
    TriggerError,
    probe_threshold,
)

__all__ = ["AdaptiveTrigger", "Decision", "Reason", "TriggerError", "probe_threshold"]
