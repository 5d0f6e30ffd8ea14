"""Paimon table option names that pypaimon's ``CoreOptions`` does not list
but Paimon (Java) reads from a table's schema: Java's ``CoreOptions`` (with
their fallback names) and ``FlinkConnectorOptions`` (Flink jobs read a
table's ``sink.*``, ``scan.*`` and ``lookup.*`` options), as of Paimon's
master in 2026. Only names, for telling a misspelt option from one another
engine reads (:mod:`._table_options`); pypaimon's own names come from
pypaimon itself."""

JAVA_CORE = """
    aggregation.remove-record-on-delete alter-column-null-to-not-null.disabled
    async-file-write batch-scan-mode blob-compaction.enabled
    blob-write-null-on-fetch-failure blob-write-null-on-missing-file blob.split-by-file-size
    blob.stored-descriptor-fields bucket-append-ordered bucket-function.type cache-page-size
    chain-table.chain-partition-keys chain-table.enabled chain-table.split.key-range-enabled
    chain-table.streaming.merge-snapshot changelog-file.compression changelog-file.prefix
    changelog-file.stats-mode changelog-producer.lookup-wait
    changelog-producer.row-deduplicate changelog-producer.row-deduplicate-ignore-fields
    changelog.num-retained.max changelog.num-retained.min changelog.time-retained
    clustering.columns clustering.history-partition.idle-to-full-sort
    clustering.history-partition.limit clustering.incremental clustering.incremental.mode
    clustering.incremental.optimize-write clustering.strategy commit.callback.#.param
    commit.callbacks commit.discard-duplicate-files commit.force-compact
    commit.force-create-snapshot commit.strict-mode.last-safe-snapshot
    compaction.delete-ratio-threshold compaction.file-num-limit
    compaction.force-rewrite-all-files compaction.force-up-level-0
    compaction.incremental-size-threshold compaction.max-size-amplification-percent
    compaction.min.file-num compaction.offpeak-ratio compaction.offpeak.end.hour
    compaction.offpeak.start.hour compaction.optimization-interval compaction.size-ratio
    compaction.skip-expired-partitions compaction.small-file-ratio
    compaction.total-size-threshold consumer-id consumer.changelog-only
    consumer.expiration-time consumer.ignore-progress consumer.mode
    continuous.discovery-interval cross-partition-upsert.bootstrap-parallelism
    cross-partition-upsert.index-ttl data-evolution.compaction.rewrite-row-ids
    data-evolution.merge-into.file-pruning data-evolution.merge-into.source-persist
    data-evolution.reassign.skip-contiguous-row-count data-file.thin-mode
    delete-file.thread-num delete.force-produce-changelog
    deletion-vector.index-file.target-size deletion-vectors.bitmap64
    deletion-vectors.modifiable disable-explicit-type-casting
    dynamic-bucket.assigner-parallelism dynamic-bucket.initial-buckets
    end-input.check-partition-expire file-index.in-manifest-threshold
    file-index.read.enabled file-operation.thread-num file-reader-async-threshold
    file.suffix.include.compression force-lookup format-table.commit-hive-sync-url
    format-table.file.compression format-table.implementation
    format-table.partition-path-only-value format-table.scan.list-parallelism
    full-compaction.delta-commits global-index.build.max-parallelism
    global-index.build.max-shard ignore-update-before incremental-between
    incremental-between-scan-mode incremental-between-tag-to-snapshot
    incremental-to-auto-tag key-value.sequence_number.enabled local-kv-db.block-size
    local-merge-buffer-size local-sort.max-num-file-handles log.scan
    log.scan.timestamp-millis lookup-compact lookup-compact.max-interval lookup-wait
    lookup.blob-as-descriptor lookup.cache-file-retention lookup.cache-max-disk-size
    lookup.cache-max-memory-size lookup.cache-rows lookup.cache-spill-compression
    lookup.cache.bloom.filter.enabled lookup.cache.bloom.filter.fpp
    lookup.cache.high-priority-pool-ratio lookup.continuous.discovery-interval
    lookup.hash-load-factor lookup.merge-buffer-size lookup.merge-records-threshold
    lookup.remote-file.enabled lookup.remote-file.level-threshold
    manifest-sort.max-rewrite-size manifest-sort.partition-field
    manifest.delete-file-drop-stats manifest.full-compaction-threshold-size
    manifest.merge-min-count manifest.merge-optimize.enabled
    materialized-table.definition-query materialized-table.interval-freshness
    materialized-table.interval-freshness.time-unit materialized-table.logical-refresh-mode
    materialized-table.refresh-handler-bytes materialized-table.refresh-handler-description
    materialized-table.refresh-mode materialized-table.refresh-status
    metadata.stats-dense-store metadata.stats-keep-first-n-columns
    metadata.stats-mode.per.level metastore.partitioned-table metastore.tag-to-partition
    metastore.tag-to-partition.preview num-levels num-sorted-run.compaction-trigger
    num-sorted-run.stop-trigger orc.write.batch-size overwrite-upgrade page-size
    parquet.enable.dictionary parquet.variant.shreddingSchema
    partial-update.remove-record-on-delete partial-update.remove-record-on-sequence-group
    partition partition.end-input-to-done partition.expiration-batch-size
    partition.expiration-check-interval partition.expiration-max-num
    partition.expiration-strategy partition.expiration-time
    partition.idle-time-to-report-statistic partition.mark-done-action
    partition.mark-done-action.custom.class partition.mark-done-action.http.params
    partition.mark-done-action.http.url partition.sink-strategy
    partition.timestamp-format.strict partition.timestamp-formatter
    partition.timestamp-pattern pk-clustering-override pk-multivalue.index.columns
    postpone.batch-write-fixed-bucket.rescale-load-factor postpone.merge-on-read primary-key
    record-level.expire-time record-level.time-field rowkind.field scan.bounded.watermark
    scan.bucket scan.fallback-branch.read-fail-fast scan.fallback-delta-branch
    scan.fallback-snapshot-branch scan.ignore-corrupt-files scan.ignore-lost-files
    scan.max-splits-per-task scan.plan-auto-tag-for-read.time-retained
    scan.plan-sort-partition scan.primary-branch sequence.snapshot-ordering
    sink.clustering.by-columns sink.clustering.strategy sink.process-time-zone
    sink.watermark-time-zone snapshot.clean-empty-directories
    snapshot.expire.clean-empty-directories snapshot.expire.execution-mode
    snapshot.expire.limit snapshot.num-retained.max snapshot.num-retained.min
    snapshot.time-retained snapshot.watermark-idle-timeout
    sort-compaction.local-sample.magnification sort-compaction.range-strategy sort-engine
    sort-spill-buffer-size sort-spill-threshold spill-compression
    spill-compression.zstd-level stream-scan-mode streaming-read-append-overwrite
    streaming-read-overwrite streaming.read.snapshot.delay
    table-read.sequence-number.enabled tag.automatic-completion tag.automatic-creation
    tag.batch.customized-name tag.callback.#.param tag.callbacks tag.create-success-file
    tag.creation-delay tag.creation-period tag.creation-period-duration
    tag.default-time-retained tag.num-retained-max tag.period-formatter
    tag.time-expire-enabled variant.inferShreddingSchema
    variant.shredding.adaptive.maxInferBufferRow variant.shredding.adaptive.retentionRatio
    variant.shredding.inferenceMode variant.shredding.maxInferBufferRow
    variant.shredding.maxSchemaDepth variant.shredding.maxSchemaWidth
    variant.shredding.minFieldCardinalityRatio vector-search.distribute.enabled
    vector-search.lateral-join.batch-size visibility-callback.check-interval
    visibility-callback.enabled visibility-callback.timeout write-buffer-for-append
    write-buffer-size write-buffer-spill.max-disk-size write-buffer-spillable
    write-max-writers-to-spill write-only write.batch-memory write.batch-size
    write.compaction-skip write.sequence-number-init-mode zorder.var-length-contribution""".split()

JAVA_FLINK = """
    changelog-producer.compaction-interval changelog.precommit-compact.buffer-size
    changelog.precommit-compact.thread-num commit.custom-listeners
    compaction.bucket-distribution-strategy end-input.watermark
    filesystem.job-level-settings.enabled lookup.async lookup.async-thread-number
    lookup.bootstrap-parallelism lookup.cache lookup.dynamic-partition.refresh-interval
    lookup.dynamic-partition.refresh.async lookup.refresh.async
    lookup.refresh.async.pending-snapshot-count lookup.refresh.full-load-threshold
    lookup.refresh.time-periods-blacklist partition.idle-time-to-done
    partition.mark-done-action.mode partition.mark-done.recover-from-state
    partition.time-interval precommit-compact read.shuffle-bucket-with-partition
    scan.bounded scan.dedicated-split-generation scan.infer-parallelism
    scan.infer-parallelism.max scan.max-snapshot.count scan.parallelism scan.partitions
    scan.remove-normalize scan.split-enumerator.batch-size scan.split-enumerator.mode
    scan.watermark.alignment.group scan.watermark.alignment.max-drift
    scan.watermark.alignment.update-interval scan.watermark.emit.strategy
    scan.watermark.idle-timeout sink.clustering.sample-factor
    sink.clustering.sort-in-cluster sink.committer-cpu sink.committer-memory
    sink.committer-operator-chaining sink.coordinator-commit.enabled
    sink.cross-partition.managed-memory sink.key-only-deletes.enabled
    sink.managed.writer-buffer-memory sink.operator-uid.suffix sink.parallelism
    sink.savepoint.auto-tag sink.use-managed-memory-allocator
    sink.writer-coordinator.cache-expire-after-access sink.writer-coordinator.cache-memory
    sink.writer-coordinator.cache-soft-values sink.writer-coordinator.enabled
    sink.writer-coordinator.page-size sink.writer-coordinator.prefetch-manifests
    sink.writer-cpu sink.writer-memory sink.writer-refresh-detectors
    source.checkpoint-align.enabled source.checkpoint-align.timeout
    source.operator-uid.suffix unaware-bucket.compaction.parallelism
    unaware-bucket.no-shuffle""".split()

# families of names with a variable part: fields.<column>.<option>,
# file-index.<index>.columns, and the file formats' own settings that
# Paimon hands to the format's writer (orc.*, parquet.*, avro.*)
JAVA_PREFIXES = ("fields.", "file-index.", "orc.", "parquet.", "avro.")
