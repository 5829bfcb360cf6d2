"""What compiling does to the speed of each workload the reference study measured: the blog's
shapes in the forward, training, the transformer block, FlexAttention, attention over length,
compile targets layer by layer, and real models. Sections of ``python -m reference.findings``."""
