"""Answer scoring: math-verify (or a plugged-in function) in a process pool with a per-item timeout.

math-verify's own timeouts use SIGALRM, which fails off the main thread and cannot interrupt a
long call inside C code, so they are disabled here. Each item runs in a worker process instead and
the event loop enforces the timeout; a worker that overruns is killed with its pool and a fresh
pool takes over, so one pathological answer cannot wedge a run.

Custom rewards are named `package.module:function`: they take `(prediction: str, gold: str)` and
return a `RewardResult`, a float (`correct` when >= 1.0) or a bool. They run in the same scoring
processes, so the module must be importable there by that path (installed, or on the parent's
`sys.path`, which those processes take up). They also run the parent's main script again, so a
script that starts a scorer needs the usual `if __name__ == "__main__":` guard.
"""

from agent_eval.rewards.loading import gold_check, load_reward
from agent_eval.rewards.math_answer import gsm8k_gold, score_math
from agent_eval.rewards.result import GoldCheck, RewardFn, RewardResult, RewardStatus
from agent_eval.rewards.scorer import RewardPoolError, RewardScorer

__all__ = [
    "GoldCheck",
    "RewardFn",
    "RewardPoolError",
    "RewardResult",
    "RewardScorer",
    "RewardStatus",
    "gold_check",
    "gsm8k_gold",
    "load_reward",
    "score_math",
]
