"""What a run leaves: HDF5 records, the run file, reports, exports, progress."""
