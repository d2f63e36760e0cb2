"""The labels under which the resume tests draw the epoch they interrupt and where they take
the checkpoint (``resume_draws``): a failing test's record names its draws by them, and a
reproduction script reads them back (``repro_snippets``, ``repro``). Apart from the draws,
which import Hypothesis: a rank process imports the scripts' modules, and never Hypothesis."""

EPOCH_LABEL = "epoch"
CHECKPOINT_LABEL = "k (items before the checkpoint)"
