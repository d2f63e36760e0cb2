"""The labels under which the resume and elastic tests draw the epoch they interrupt, where
they take the checkpoint and the world size they resume on (``resume_draws``,
``properties/test_elastic.py``): a failing test's record names its draws by them, and a
reproduction script reads them back (``repro_snippets``, ``repro``). Apart from the draws,
which import Hypothesis: a rank process imports the scripts' modules, and never Hypothesis."""

EPOCH_LABEL = "epoch"
CHECKPOINT_LABEL = "k (items before the checkpoint)"
NEW_WORLD_LABEL = "W' (world size resumed on)"
# Two resumes in one epoch (resumes_compose): the first checkpoint, then the items between the two.
FIRST_CHECKPOINT_LABEL = "k (items before the first checkpoint)"
BETWEEN_CHECKPOINTS_LABEL = "j (items between the two checkpoints)"
GLOBAL_SEED_LABEL = "global RNG seed"
# A state loaded under other arguments (stale_state_refused, other_world_size_refused).
CHANGED_LABEL = "argument changed on resume"
OTHER_SIZE_LABEL = "N of the resumed run"
OTHER_SEED_LABEL = "seed of the resumed run"
OTHER_WORLD_LABEL = "W of the resumed run"
# A chain of two changes of world size (elastic_hops_compose): W -> W' (j items each) -> W''.
MIDDLE_TAKEN_LABEL = "j (items on each of W' before saving)"
LAST_WORLD_LABEL = "W'' (world size resumed on last)"
