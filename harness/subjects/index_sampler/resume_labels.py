"""The labels under which the resume and elastic tests draw the epoch they interrupt, where
they take the checkpoint and the world size they resume on (``resume_draws``,
``properties/test_elastic.py``): a failing test's record names its draws by them, and a
reproduction script reads them back (``repro_snippets``, ``repro``). Apart from the draws,
which import Hypothesis: a rank process imports the scripts' modules, and never Hypothesis."""

EPOCH_LABEL = "epoch"
CHECKPOINT_LABEL = "k (items before the checkpoint)"
NEW_WORLD_LABEL = "W' (world size resumed on)"
