"""The Llama3-70B-shaped plan of the TrainVerify paper (Table 2) in template form.

80 layers, dp16 tp8 pp4, 32 micro-batches (512 ranks): the parallel shape of the 70B plan.
The blocks (a layer's forward and backward over a TP group of 8, the loss head, SGD on a
shard) are verified at small sizes with the real TP degree (sequence 2, hidden 16), and the
claim is stated at exactly those sizes: no reduction theorem extends a block to other
sequence or hidden sizes (both are contracted or normalized). The schedule is checked rank
by rank; the loss scale is 1/(M * dp * B * S * H) at those sizes.

    pvcert verify examples/train/llama70b_template.py --emit-cert c.json
    pvcert replay c.json

``make_template(...)`` takes other degrees, e.g. the Llama3-405B shape:
``make_template(layers=126, dp=64, tp=8, pp=16, micro_batches=16)``
(stage ``p`` holds layers ``p*L//pp .. (p+1)*L//pp``: 7 or 8 of the 126).
"""

from verifier.train.template import TemplateCase


def make_template(layers: int = 80, dp: int = 16, tp: int = 8, pp: int = 4, micro_batches: int = 32) -> TemplateCase:
    return TemplateCase(f"llama_{layers}l_dp{dp}_tp{tp}_pp{pp}_mb{micro_batches}_template", layers, dp, tp, pp,
                        micro_batches)
