"""Data sets for the bsvm_scale experiments.

* :class:`Dataset` - the container (X, y, name, task, feature_names,
  provenance, optional splits and extra arrays).
* Seeded generators of every synthetic set of the protocols
  (:func:`sinc_silf`, :func:`sinc_gauss`, :func:`robot_arm`,
  :func:`robot_arm6`, :func:`mackey_glass`, :func:`gauss1d`,
  :func:`gauss2d`, :func:`twonorm`, :func:`ringnorm`, :func:`waveform`,
  :func:`friedman1` .. :func:`friedman3`) with the exact Bayes posteriors of
  the Gaussian class sets.
* The HDF5 format: :func:`write_dataset` (atomic), :func:`read_dataset`,
  :func:`dataset_info`, :func:`read_case_ids`.
* Shipped real data: :func:`load_real` (boston, pima, titanic,
  breast_cancer, digits, diamonds).
* The registry: :func:`list_datasets`, :func:`generate`.
* User data: :func:`import_table` (CSV with a header, or ``.npy``).
"""

from ._dataset import TASKS, Dataset, make_seed_rng, ordered_split, random_splits
from .hdf5 import (FORMAT_VERSION, DatasetFileError, dataset_info, read_case_ids, read_dataset,
                   read_encoder, write_dataset)
from .importing import import_table
from .real import REAL_DATASETS, data_dir, load_real, real_path
from .registry import DatasetEntry, dataset_params, generate, get_entry, list_datasets
from .synthetic import (friedman1, friedman2, friedman3, gauss1d, gauss1d_posterior, gauss2d,
                        gauss2d_bayes_error, gauss2d_log_densities, gauss2d_posterior,
                        mackey_glass, mackey_glass_series, ringnorm, robot_arm, robot_arm6,
                        sinc, sinc_gauss, sinc_silf, twonorm, waveform, waveform_bases)

__all__ = [
    "TASKS",
    "Dataset",
    "make_seed_rng",
    "ordered_split",
    "random_splits",
    "FORMAT_VERSION",
    "DatasetFileError",
    "dataset_info",
    "read_dataset",
    "read_case_ids",
    "read_encoder",
    "write_dataset",
    "import_table",
    "REAL_DATASETS",
    "data_dir",
    "load_real",
    "real_path",
    "DatasetEntry",
    "dataset_params",
    "generate",
    "get_entry",
    "list_datasets",
    "friedman1",
    "friedman2",
    "friedman3",
    "gauss1d",
    "gauss1d_posterior",
    "gauss2d",
    "gauss2d_bayes_error",
    "gauss2d_log_densities",
    "gauss2d_posterior",
    "mackey_glass",
    "mackey_glass_series",
    "ringnorm",
    "robot_arm",
    "robot_arm6",
    "sinc",
    "sinc_gauss",
    "sinc_silf",
    "twonorm",
    "waveform",
    "waveform_bases",
]
