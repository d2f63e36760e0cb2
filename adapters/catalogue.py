"""The real samplers the suite certifies: one record each, read by ``tools/verdict_table.py``
(which installs each package and certifies it, writing the table of docs/real-samplers.md),
by ``selftests/test_adapters.py`` (every spec resolves, every contract exists, every adapter
factory is listed) and by ``python -m sampler_conformance.adapters.catalogue``, which prints
them. Plain data: it imports nothing of the packages it names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RealSampler:
    sampler: str  # as people know it
    spec: str  # --sampler
    contract: str  # the contract the sampler claims
    requirement: str | None  # what to pip install (space-separated); None: ships with torch or with this repo
    version_of: str | None  # distribution whose version the row shows; None: not a PyPI package
    origin: str = ""  # shown instead of a version when version_of is None
    # Why the verdict table cannot certify it in its environment (the docs say where it was); "": it does.
    not_in_table: str = ""
    options: tuple[str, ...] = ()  # more options of its certification, as the table shows them (--meshes=...)


MEGATRON_ORIGIN = "Megatron-LM cd55b7a (not on PyPI; ported in selftests/corpus/megatron.py)"
FAIRCHEM_ORIGIN = (
    "fairchem-core 2.24.0 (its module imports numba and fairchem's datasets, and the wheel pins its own torch; "
    "ported in selftests/corpus/fairchem.py)"
)

REAL_SAMPLERS: tuple[RealSampler, ...] = (
    RealSampler("DistributedSampler", "torch.utils.data.distributed:DistributedSampler", "torch", None, "torch"),
    RealSampler(
        "StatefulDistributedSampler",
        "sampler_conformance.adapters.torchdata:StatefulDistributedSampler",
        "torch",
        "torchdata",
        "torchdata",
    ),
    RealSampler(
        "DistributedSamplerWrapper (around a seeded RandomSampler)",
        "sampler_conformance.adapters.lightning:DistributedSamplerWrapper",
        "torch",
        "pytorch-lightning",
        "pytorch-lightning",
    ),
    RealSampler(
        "catalyst's DistributedSamplerWrapper (around a seeded RandomSampler)",
        "sampler_conformance.adapters.catalyst:DistributedSamplerWrapper",
        "torch",
        "catalyst",
        "catalyst",
    ),
    RealSampler(
        "UnrepeatedDistributedSampler",
        "sampler_conformance.adapters.lightning:UnrepeatedDistributedSampler",
        "partition",
        "pytorch-lightning",
        "pytorch-lightning",
    ),
    RealSampler(
        "DefaultSampler(round_up=True)",
        "sampler_conformance.adapters.mmengine:DefaultSampler",
        "torch",
        "mmengine",
        "mmengine",
    ),
    RealSampler(
        "DefaultSampler(round_up=False)",
        "sampler_conformance.adapters.mmengine:DefaultSamplerNoRoundUp",
        "partition",
        "mmengine",
        "mmengine",
    ),
    RealSampler(
        "InfiniteSampler", "sampler_conformance.adapters.mmengine:InfiniteSampler", "infinite", "mmengine", "mmengine"
    ),
    RealSampler(
        "BatchSamplerShard (around a BatchSampler)",
        "sampler_conformance.adapters.accelerate:BatchSamplerShard",
        "batch",
        "accelerate",
        "accelerate",
    ),
    # On device meshes (docs/meshes.md): accelerate counts only dimensions named dp_replicate and
    # dp_shard as data, so the second row names its meshes so; the first keeps the suite's default.
    *(
        RealSampler(
            "prepare_data_loader(torch_device_mesh=...) (its BatchSamplerShard)",
            "sampler_conformance.adapters.accelerate:PreparedOnMesh",
            "batch+mesh",
            "accelerate",
            "accelerate",
            options=options,
        )
        for options in ((), ("--meshes=dp_shard2.tp2,tp2.dp_shard2",))
    ),
    RealSampler(
        "prepare_data_loader(torch_device_mesh=..., dispatch_batches=False) (its IterableDatasetShard)",
        "sampler_conformance.adapters.accelerate:PreparedStreamOnMesh",
        "stream_padded+mesh",
        "accelerate",
        "accelerate",
    ),
    # Lightning builds its own (data_parallel, tensor_parallel) mesh, data outermost: no other.
    RealSampler(
        "ModelParallelStrategy's DistributedSampler (FSDP2 x TP)",
        "sampler_conformance.adapters.lightning:ModelParallelDistributedSampler",
        "torch+mesh",
        "pytorch-lightning",
        "pytorch-lightning",
        options=("--meshes=data_parallel2.tensor_parallel2", "--data-dims=data_parallel"),
    ),
    RealSampler(
        "CustomDistributedBatchSampler",
        "sampler_conformance.adapters.funasr:CustomDistributedBatchSampler",
        "rank_batches",
        "funasr",
        "funasr",
    ),
    RealSampler(
        "RepeatSampler as GRPOTrainer reads it, sharded by accelerate",
        "sampler_conformance.adapters.trl:GRPORepeatSampler",
        "groups",
        "trl",
        "trl",
    ),
    # Its sequence-parallel groups are the mesh's data replicas: cp innermost, as rank // cp assumes.
    RealSampler(
        "SequenceParallelRepeatRandomSampler as axolotl's GRPO trainer builds it (context parallelism)",
        "sampler_conformance.adapters.axolotl:SequenceParallelRepeatRandomSampler",
        "groups+mesh",
        "--no-deps axolotl",
        "axolotl",
        options=("--meshes=dp2.cp2",),
    ),
    RealSampler(
        "GroupByLabelBatchSampler as SentenceTransformerTrainer reads it, sharded by accelerate",
        "sampler_conformance.adapters.sentence_transformers:GroupByLabelBatchSampler",
        "labels",
        "sentence-transformers accelerate",
        "sentence-transformers",
    ),
    RealSampler(
        "NoDuplicatesBatchSampler as SentenceTransformerTrainer reads it (distinct text pairs), sharded by accelerate",
        "sampler_conformance.adapters.sentence_transformers:NoDuplicatesBatchSampler",
        "batch",
        "sentence-transformers accelerate",
        "sentence-transformers",
    ),
    RealSampler(
        "DistributedLengthGroupedSampler (lengths 1 to 509, batch_size 4)",
        "sampler_conformance.adapters.transformers:DistributedLengthGroupedSampler",
        "torch",
        "transformers",
        "transformers",
    ),
    RealSampler(
        "LengthGroupedSampler as Trainer(group_by_length) feeds a rank, sharded by accelerate",
        "sampler_conformance.adapters.transformers:TrainerGroupByLength",
        "batch",
        "transformers accelerate",
        "transformers",
    ),
    # Resumable and elastic: each certified under both extensions of the base it fits.
    *(
        RealSampler(sampler, spec, f"{base}+{extension}", requirement, version_of, origin)
        for sampler, spec, base, requirement, version_of, origin in (
            (
                "StatefulDistributedSampler (and through StatefulDataLoader)",
                "sampler_conformance.adapters.torchdata:StatefulDistributedSampler",
                "torch",
                "torchdata",
                "torchdata",
                "",
            ),
            (
                "skip_first_batches / SkipBatchSampler resume (BatchSamplerShard)",
                "sampler_conformance.adapters.accelerate:SkipFirstBatchesResume",
                "batch",
                "accelerate",
                "accelerate",
                "",
            ),
            (
                "MegatronPretrainingSampler, resumed through consumed_samples",
                "selftests.corpus.megatron:pretraining_sampler",
                "batch",
                None,
                None,
                MEGATRON_ORIGIN,
            ),
            (
                "MegatronPretrainingRandomSampler, resumed through consumed_samples",
                "selftests.corpus.megatron:pretraining_random_sampler",
                "batch",
                None,
                None,
                MEGATRON_ORIGIN,
            ),
        )
        for extension in ("resumable", "elastic")
    ),
    # Resumed by a count their trainers keep, through the entry point each factory declares
    # (adapters/resumed_by_count.py): certified under +resumable.
    RealSampler(
        "OpenRLHF's DistributedSampler, resumed through set_epoch(epoch, consumed_samples)",
        "sampler_conformance.adapters.openrlhf:DistributedSampler",
        "torch+resumable",
        "--no-deps openrlhf",
        "openrlhf",
    ),
    RealSampler(
        "fairchem's StatefulDistributedSampler, resumed through set_epoch_and_start_iteration",
        "selftests.corpus.fairchem:stateful_distributed_sampler",
        "torch+resumable",
        None,
        None,
        FAIRCHEM_ORIGIN,
    ),
    RealSampler(
        "ElasticDistributedSampler, resumed through start_index",
        "sampler_conformance.adapters.torch_elastic:ElasticDistributedSampler",
        "torch+elastic",
        None,
        "torch",
    ),
    RealSampler(
        "AspectRatioBatchSampler over mmengine's DefaultSampler",
        "selftests.corpus.mmdet:aspect_ratio_batch_sampler",
        "aspect_ratio",
        "mmengine",
        None,
        "mmdetection 0869b5f (needs compiled mmcv; ported in selftests/corpus/mmdet.py), over mmengine",
    ),
    RealSampler(
        "DistributedSampler, seed 000",
        "selftests.corpus.reference:MaskRCNNDistributedSampler",
        "contiguous",
        None,
        None,
        "maskrcnn-benchmark (not on PyPI; ported in selftests/corpus/reference.py)",
    ),
    RealSampler(
        "DataPartitioner as a sampler, seed 003",
        "selftests.corpus.reference:DataPartitionerSampler",
        "partition",
        None,
        None,
        "PyTorch distributed tutorial (code in selftests/corpus/reference.py)",
    ),
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
        "data_loader+elastic",
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


def listing() -> str:
    """One line per record: its --sampler and --contract."""
    width = max(len(record.spec) for record in REAL_SAMPLERS)
    return "".join(f"{record.spec:<{width}}  --contract={record.contract}\n" for record in REAL_SAMPLERS)


if __name__ == "__main__":
    print(listing(), end="")

# The rows certified at scale too (``tools/verdict_table.py --scale``: ``--scale`` and a
# projection to N = 1e9 on 1,024 ranks, on simulated ranks): the samplers long pretraining
# runs use, and those whose bugs live past N = 2^24 (docs/scale.md). By spec and contract.
AT_SCALE: tuple[tuple[str, str], ...] = (
    ("torch.utils.data.distributed:DistributedSampler", "torch"),
    ("sampler_conformance.adapters.torchdata:StatefulDistributedSampler", "torch"),
    ("sampler_conformance.adapters.lightning:DistributedSamplerWrapper", "torch"),
    ("sampler_conformance.adapters.catalyst:DistributedSamplerWrapper", "torch"),
    ("sampler_conformance.adapters.mmengine:DefaultSampler", "torch"),
    ("sampler_conformance.adapters.transformers:DistributedLengthGroupedSampler", "torch"),
    ("selftests.corpus.megatron:pretraining_random_sampler", "batch+resumable"),
    ("sampler_conformance.adapters.lightning:WeightedDistributedSamplerWrapper", "weighted"),
    ("sampler_conformance.adapters.monai:DistributedWeightedRandomSampler", "weighted_partition"),
    ("sampler_conformance.adapters.torchdata:MultiNodeWeightedSampler", "weighted"),
    ("sampler_conformance.adapters.hf_datasets:split_by_node", "stream_exact"),
    ("sampler_conformance.adapters.webdataset_tar:split_by_node", "stream"),
    ("sampler_conformance.adapters.accelerate:IterableDatasetShard", "stream_padded"),
)
