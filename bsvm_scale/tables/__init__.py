"""Tables in and out: the input schema, its coding into the design matrix,
and the readers of tables (pandas DataFrames, dicts of columns, CSV files).

* :mod:`~bsvm_scale.tables.schema` -- column kinds, inference, the missing and
  unknown policies, cell parsing;
* :mod:`~bsvm_scale.tables.encoder` -- :class:`TableEncoder`, the fitted coding
  (one-hot categories, yes/no flags, medians), stored as JSON text with every
  data set and model built from a table;
* :mod:`~bsvm_scale.tables.frame` -- :class:`Table` (a table with declarations
  and policies), :class:`EncodedTable`, DataFrame and dict adapters;
* :mod:`~bsvm_scale.tables.csv` -- CSV files as columns of text cells.

The lowest layer of the package: it imports nothing else of it, and pandas
only through the objects it is given.
"""

from .encoder import Encoded, TableEncoder, describe_schema
from .frame import EncodedTable, Table, is_table
from .schema import KINDS, Column, Schema, TableError

__all__ = ["Table", "EncodedTable", "TableEncoder", "Encoded", "Schema", "Column", "KINDS",
           "TableError", "is_table", "describe_schema"]
