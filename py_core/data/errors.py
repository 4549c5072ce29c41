"""A data set that cannot be read: DataError, with the line, column and field where it fails."""
from __future__ import annotations


class DataError(ValueError):
    """A data set that cannot be read, with where: `line` (1-based physical line of the file),
    `column` (1-based field index) and `field` (that column's header name), each None if unknown.
    The message repeats them in words, with the file's name and what was expected."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 field: str | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.field = field

    def to_dict(self) -> dict:
        return {"message": self.message, "line": self.line, "column": self.column,
                "field": self.field}


def data_error(name: str, what: str, line: int | None = None, column: int | None = None,
               header: list[str] | None = None) -> DataError:
    """DataError whose message reads "NAME, line L, column C ('field'): WHAT"."""
    field = header[column - 1] if header and column and column <= len(header) else None
    where = [name]
    if line is not None:
        where.append(f"line {line}")
    if column is not None:
        where.append(f"column {column}" + (f" ({field!r})" if field is not None else ""))
    return DataError(f"{', '.join(where)}: {what}", line, column, field)
