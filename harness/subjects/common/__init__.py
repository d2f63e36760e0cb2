"""What every subject may use and none owns: the dataset handed to index samplers
(``index_dataset``), the checked reading of indices, batches and ``len()`` (``reading``), and
what the cost probe builds (``cost``).
A subject imports from here and from its own folder, never from another subject's."""
