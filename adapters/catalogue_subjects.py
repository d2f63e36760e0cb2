"""The real streaming datasets, data loaders, weighted and batch samplers the suite certifies:
the rows of ``adapters/catalogue.py`` that are not index samplers. Plain data."""

from __future__ import annotations

from .real_sampler import FAIRCHEM_ORIGIN, MEGATRON_ORIGIN, RealSampler

OTHER_SUBJECTS: tuple[RealSampler, ...] = (
    # Streaming datasets (docs/streaming-datasets.md): the factory is the spec.
    RealSampler(
        "IterableDataset, the PyTorch docs' example (verbatim)",
        "sampler_conformance.adapters.torch_iterable:docs_example",
        "stream",
        None,
        "torch",
    ),
    *(
        RealSampler(
            "split_dataset_by_node over IterableDataset.from_generator",
            "sampler_conformance.adapters.hf_datasets:split_by_node",
            contract,
            "datasets",
            "datasets",
        )
        for contract in ("stream_exact", "stream", "stream_exact+resumable")
    ),
    RealSampler(
        "split_dataset_by_node over Arrow files streamed with load_dataset",
        "sampler_conformance.adapters.hf_datasets:arrow_files",
        "stream_exact",
        "datasets",
        "datasets",
    ),
    RealSampler(
        "interleave_datasets(probabilities=) of IterableDatasets, split_dataset_by_node",
        "sampler_conformance.adapters.hf_datasets:interleaved",
        "stream_mix",
        "datasets",
        "datasets",
    ),
    RealSampler(
        "WebDataset over tar shards, split_by_node",
        "sampler_conformance.adapters.webdataset_tar:split_by_node",
        "stream",
        "webdataset",
        "webdataset",
    ),
    RealSampler(
        "RandomMix(probs=) of WebDatasets over tar shards, split_by_node",
        "sampler_conformance.adapters.webdataset_tar:random_mix",
        "stream_mix",
        "webdataset",
        "webdataset",
    ),
    RealSampler(
        "StreamingDataset over chunks written by litdata's BinaryWriter",
        "sampler_conformance.adapters.litdata_chunks:streaming_dataset",
        "stream_truncated",
        "litdata",
        "litdata",
    ),
    RealSampler(
        "CombinedStreamingDataset(weights=) over litdata StreamingDatasets",
        "sampler_conformance.adapters.litdata_chunks:combined",
        "stream_mix",
        "litdata",
        "litdata",
    ),
    # Pinned to the versions the adapters' docstrings cite (the classes are the same in transformers 5.24.0 and
    # torch_geometric 2.8.1).
    RealSampler(
        "IterableDatasetShard over a dataset that shuffles with its generator",
        "sampler_conformance.adapters.accelerate:IterableDatasetShard",
        "stream_padded",
        "accelerate==1.15.0",
        "accelerate",
    ),
    RealSampler(
        "IterableDatasetShard (trainer_pt_utils) over a dataset that shuffles with its generator",
        "sampler_conformance.adapters.transformers:IterableDatasetShard",
        "stream_padded",
        "transformers==5.18.0",
        "transformers",
    ),
    RealSampler(
        "StreamingDataset over MDS shards written by its MDSWriter",
        "sampler_conformance.adapters.mosaic_streaming:streaming_dataset",
        "stream_padded",
        "mosaicml-streaming==0.13.0",
        "mosaicml-streaming",
        not_in_table="import streaming imports torchvision, whose PyPI wheels do not import beside torch 2.13.0's "
        "CPU build: certified in an environment of its own (docs/streaming-datasets.md)",
    ),
    # Data loaders that own the sampling and the batching (harness/subjects/data_loader/), each under the
    # contract its library claims.
    RealSampler(
        "NumpyFSLDataLoader over a token file, driven as olmo-core's Trainer drives it",
        "sampler_conformance.adapters.olmo_loader:numpy_fsl",
        "data_loader+elastic+resumable",
        "ai2-olmo-core",
        "ai2-olmo-core",
    ),
    RealSampler(
        "ParallelAwareDataloader as torchtitan's Trainer builds its text loader (infinite=False)",
        "sampler_conformance.adapters.torchtitan_loader:text_loader",
        "data_loader",
        "torchtitan",
        "torchtitan",
    ),
    RealSampler(
        "LightningDataModule's train loader, as the Trainer prepares it under DDP",
        "sampler_conformance.adapters.lightning_datamodule:train_loader",
        "data_loader",
        "pytorch-lightning==2.6.6",
        "pytorch-lightning",
        alone="litdata's rows install a torchvision that does not import beside torch 2.13.0's CPU build, and "
        "pytorch_lightning imports it (through torchmetrics)",
    ),
    *(
        RealSampler(loader, spec, "data_loader+elastic", None, None, MEGATRON_ORIGIN)
        for loader, spec in (
            (
                "build_pretraining_data_loader (MegatronPretrainingSampler, --dataloader-type single)",
                "selftests.corpus.megatron:pretraining_loader",
            ),
            (
                "build_pretraining_data_loader (MegatronPretrainingRandomSampler, --dataloader-type cyclic)",
                "selftests.corpus.megatron:pretraining_random_loader",
            ),
        )
    ),
    # Weighted samplers (docs/weighted-samplers.md).
    RealSampler(
        "DistributedSamplerWrapper around WeightedRandomSampler",
        "sampler_conformance.adapters.lightning:WeightedDistributedSamplerWrapper",
        "weighted",
        "pytorch-lightning",
        "pytorch-lightning",
    ),
    RealSampler(
        "DistributedWeightedRandomSampler",
        "sampler_conformance.adapters.monai:DistributedWeightedRandomSampler",
        "weighted_partition",
        "monai",
        "monai",
    ),
    RealSampler(
        "MultiNodeWeightedSampler (one source per item)",
        "sampler_conformance.adapters.torchdata:MultiNodeWeightedSampler",
        "weighted",
        "torchdata",
        "torchdata",
    ),
    RealSampler(
        "WeightedSimpleCutSampler (one cut a batch)",
        "sampler_conformance.adapters.lhotse:WeightedSimpleCutSampler",
        "weighted_without_replacement",
        "lhotse",
        "lhotse",
    ),
    # Batch samplers that form their own batches (docs/batch-samplers.md).
    *(
        RealSampler(
            f"{name} (duration budget)",
            f"sampler_conformance.adapters.lhotse:{name}",
            "dynamic_batches",
            "lhotse",
            "lhotse",
        )
        for name in ("SimpleCutSampler", "DynamicBucketingSampler")
    ),
    RealSampler(
        "DynamicBatchSampler in DistributedSamplerWrapper, as Brain wraps it (torchaudio stubbed)",
        "sampler_conformance.adapters.speechbrain:DynamicBatchSampler",
        "dynamic_batches",
        "speechbrain",
        "speechbrain",
    ),
    RealSampler(
        "DynamicBatchSampler (mode node, shuffle, seeded by seed_everything; no rank)",
        "sampler_conformance.adapters.torch_geometric:DynamicBatchSampler",  # pinned as above
        "dynamic_batches",
        "torch_geometric==2.8.0.post1",
        "torch_geometric",
    ),
    RealSampler(
        "fairchem's MaxAtomDistributedBatchSampler (max_atoms budget)",
        "selftests.corpus.fairchem:max_atom_distributed_batch_sampler",
        "dynamic_batches",
        None,
        None,
        FAIRCHEM_ORIGIN,
    ),
    RealSampler(
        "BatchRebalanceSampler (one micro-batch per step)",
        "sampler_conformance.adapters.transformers:BatchRebalanceSampler",
        "micro_batches",
        "transformers",
        "transformers",
    ),
    RealSampler(
        "fairchem's BalancedBatchSampler (micro-batches balanced by atoms; in process groups only)",
        "selftests.corpus.fairchem:balanced_batch_sampler",
        "micro_batches",
        None,
        None,
        FAIRCHEM_ORIGIN,
    ),
    RealSampler(
        "DistributedUniformWithReplacementSampler (Poisson)",
        "sampler_conformance.adapters.opacus:DistributedUniformWithReplacementSampler",
        "poisson",
        "opacus",
        "opacus",
    ),
)
