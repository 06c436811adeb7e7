"""Sessions: JSONL transcripts, resume, compaction and file-history backups (SPEC §5)."""
