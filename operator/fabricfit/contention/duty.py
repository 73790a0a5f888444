"""How long a training step computes: the denominator that turns bytes per step into load.

Theory of operation
-------------------
A TrainingTopology declares its model and parallelism, not its step time. One step processes
``data × microBatchSize × microBatches × sequenceLength`` tokens (every data-parallel replica
its own micro-batches; context parallelism splits a sequence, expert parallelism is carved out
of the data replicas) at about ``6 × parameters`` FLOPs per token — forward 2, backward 4
(Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361 §2.1; attention's
FLOPs ignored). The world's GPUs deliver ``gpu_peak_tflops × mfu`` of it (fabric profile
fields: the dense BF16 peak, and the model FLOPs utilisation training reaches, 0.4 by default
after Llama 3's 38–43 %). The step then takes that compute time plus its exposed
communication (the cost model's prediction, read as exposed as everywhere else).

For a mixture-of-experts model ``parameters`` counts every expert while a token only passes
through ``topK`` of them, so its compute is overstated and its duty cycle (and the load its
traffic puts on links) understated. A profile without a peak (``gpu_peak_tflops: 0``) gives no
compute time: its jobs are taken to communicate all the time, the pessimistic reading.
"""

from __future__ import annotations

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import FabricProfile

FLOPS_PER_PARAMETER_TOKEN = 6.0  # forward 2 + backward 4 (Kaplan et al. §2.1)


def compute_seconds_per_step(
    parallelism: Parallelism, model: ModelShape | None, profile: FabricProfile
) -> float:
    """Seconds of computation per training step (0 when the profile has no peak)."""
    if profile.gpu_peak_tflops <= 0:
        return 0.0
    shape = model if model is not None else ModelShape()
    tokens = parallelism.data * shape.micro_batch_size * shape.micro_batches * shape.sequence_length
    flops = FLOPS_PER_PARAMETER_TOKEN * shape.parameters * tokens
    delivered = parallelism.world_size * profile.gpu_peak_tflops * 1e12 * profile.mfu
    return flops / delivered
