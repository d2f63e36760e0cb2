"""What every subject may use and none owns: the dataset handed to index samplers
(``index_dataset``) and the checked reading of indices, batches and ``len()`` (``reading``).
A subject imports from here and from its own folder, never from another subject's."""
