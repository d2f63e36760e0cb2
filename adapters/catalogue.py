"""The real samplers the suite certifies: one record each, read by ``tools/verdict_table.py``
(which installs each package and certifies it, writing the table of docs/real-samplers.md),
by ``selftests/test_adapters.py`` (every spec resolves, every contract exists, every adapter
factory is listed) and by ``python -m sampler_conformance.adapters.catalogue``, which prints
them. Plain data: it imports nothing of the packages it names. The index samplers are here;
the streams, data loaders, weighted and batch samplers in ``catalogue_subjects.py``; the record
in ``real_sampler.py``.
"""

from __future__ import annotations

from .catalogue_subjects import OTHER_SUBJECTS
from .real_sampler import FAIRCHEM_ORIGIN, MEGATRON_ORIGIN, RealSampler

__all__ = ["AT_SCALE", "REAL_SAMPLERS", "RealSampler", "listing"]

INDEX_SAMPLERS: tuple[RealSampler, ...] = (
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
)
REAL_SAMPLERS: tuple[RealSampler, ...] = INDEX_SAMPLERS + OTHER_SUBJECTS


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
