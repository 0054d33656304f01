//! What passes between the store and a database: arguments ([`Value`], [`ToValue`], [`Params`],
//! `params!`) and columns as read ([`Cell`], [`FromValue`]); integers and text only, the two types
//! every column of both backends is stored as.

/// An argument or a column: the store stores integers (instants, counts, 0/1 flags) and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Int(i64),
    Text(String),
}

impl From<i64> for Value {
    fn from(value: i64) -> Value {
        Value::Int(value)
    }
}

impl From<String> for Value {
    fn from(value: String) -> Value {
        Value::Text(value)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(value: Option<T>) -> Value {
        value.map_or(Value::Null, Into::into)
    }
}

impl From<&str> for Value {
    fn from(value: &str) -> Value {
        Value::Text(value.to_owned())
    }
}

/// A column as read, borrowed from its row.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'r> {
    Null,
    Int(i64),
    Text(&'r str),
}

impl Cell<'_> {
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Cell::Null => "NULL",
            Cell::Int(_) => "an integer",
            Cell::Text(_) => "text",
        }
    }
}

/// What can be passed as an argument.
pub trait ToValue {
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}

macro_rules! int_to_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                // Every integer the store writes fits: instants, counts, sizes of small lists.
                Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
            }
        }
    )*};
}
int_to_value!(i64, i32, u32, u64, usize);

/// What a column can be read as.
pub trait FromValue: Sized {
    fn from_cell(cell: Cell<'_>) -> Result<Self, String>;
}

impl FromValue for String {
    fn from_cell(cell: Cell<'_>) -> Result<Self, String> {
        match cell {
            Cell::Text(text) => Ok(text.to_owned()),
            other => Err(format!("expected text, found {}", other.kind())),
        }
    }
}

impl FromValue for bool {
    fn from_cell(cell: Cell<'_>) -> Result<Self, String> {
        match cell {
            Cell::Int(0) => Ok(false),
            Cell::Int(1) => Ok(true),
            Cell::Int(other) => Err(format!("expected 0 or 1, found {other}")),
            other => Err(format!("expected 0 or 1, found {}", other.kind())),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_cell(cell: Cell<'_>) -> Result<Self, String> {
        match cell {
            Cell::Null => Ok(None),
            other => T::from_cell(other).map(Some),
        }
    }
}

macro_rules! int_from_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_cell(cell: Cell<'_>) -> Result<Self, String> {
                match cell {
                    Cell::Int(value) => <$t>::try_from(value).map_err(|_| format!("{value} is out of range")),
                    other => Err(format!("expected an integer, found {}", other.kind())),
                }
            }
        }
    )*};
}
int_from_value!(i64, i32, u32, u64, usize);

/// A statement's arguments: `()`, an array or a list of [`ToValue`]s, or [`params!`].
pub trait Params {
    fn into_values(self) -> Vec<Value>;
}

impl Params for () {
    fn into_values(self) -> Vec<Value> {
        Vec::new()
    }
}

impl<T: ToValue, const N: usize> Params for [T; N] {
    fn into_values(self) -> Vec<Value> {
        self.iter().map(ToValue::to_value).collect()
    }
}

impl<T: ToValue> Params for &[T] {
    fn into_values(self) -> Vec<Value> {
        self.iter().map(ToValue::to_value).collect()
    }
}

impl Params for Vec<Value> {
    fn into_values(self) -> Vec<Value> {
        self
    }
}

/// Arguments of mixed types, in order: `params![id, start.timestamp(), note]`.
macro_rules! params {
    ($($arg:expr),* $(,)?) => {
        [$($crate::store::db::ToValue::to_value(&$arg)),*]
    };
}
pub(crate) use params;
