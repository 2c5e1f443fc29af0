//! The element types (`--type`) and the reduction ops (`--op`) a sweep runs with, by name.
//! `elem` turns them into the Rust types and the library's op values.

/// An element type of `--type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// 64-bit float.
    F64,
    /// 32-bit float.
    F32,
    /// 64-bit signed integer.
    I64,
    /// 32-bit signed integer.
    I32,
    /// Byte.
    U8,
}

impl Dtype {
    /// Every element type, in the order of `--help`.
    pub const ALL: [Dtype; 5] = [Dtype::F64, Dtype::F32, Dtype::I64, Dtype::I32, Dtype::U8];

    /// The name on the command line and in the results.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F64 => "f64",
            Dtype::F32 => "f32",
            Dtype::I64 => "i64",
            Dtype::I32 => "i32",
            Dtype::U8 => "u8",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F64 | Dtype::I64 => 8,
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::U8 => 1,
        }
    }

    /// Whether it is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F64 | Dtype::F32)
    }
}

/// A reduction op of `--op` (the library's built-in ops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpName {
    /// `op::Sum` (wrapping for integers).
    Sum,
    /// `op::Prod`.
    Prod,
    /// `op::Min`.
    Min,
    /// `op::Max`.
    Max,
    /// `op::BitAnd` (integer types).
    Band,
    /// `op::BitOr` (integer types).
    Bor,
    /// `op::BitXor` (integer types).
    Bxor,
    /// `op::ReproducibleSum` (float types): the correctly rounded sum, the same bits for every
    /// algorithm. corecoll's rows only: no baseline or peer has it.
    ReproSum,
}

impl OpName {
    /// Every op, in the order of `--help`.
    pub const ALL: [OpName; 8] = [
        OpName::Sum,
        OpName::Prod,
        OpName::Min,
        OpName::Max,
        OpName::Band,
        OpName::Bor,
        OpName::Bxor,
        OpName::ReproSum,
    ];

    /// The name on the command line and in the results.
    pub fn name(self) -> &'static str {
        match self {
            OpName::Sum => "sum",
            OpName::Prod => "prod",
            OpName::Min => "min",
            OpName::Max => "max",
            OpName::Band => "band",
            OpName::Bor => "bor",
            OpName::Bxor => "bxor",
            OpName::ReproSum => "repro-sum",
        }
    }

    /// Whether it is defined on `dtype`.
    pub fn applies_to(self, dtype: Dtype) -> bool {
        if self == OpName::ReproSum {
            return dtype.is_float();
        }
        !dtype.is_float() || matches!(self, OpName::Sum | OpName::Prod | OpName::Min | OpName::Max)
    }

    /// Why rows other than corecoll's own cannot run this op, if they cannot.
    pub fn corecoll_only(self) -> Option<&'static str> {
        (self == OpName::ReproSum).then_some(
            "--op repro-sum: corecoll's rows only (no baseline or peer has a reproducible sum)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_and_types() {
        assert!(OpName::Sum.applies_to(Dtype::F64));
        assert!(!OpName::Bxor.applies_to(Dtype::F32));
        assert!(OpName::Band.applies_to(Dtype::U8));
        assert!(OpName::ReproSum.applies_to(Dtype::F32));
        assert!(!OpName::ReproSum.applies_to(Dtype::I64));
        assert_eq!(Dtype::U8.size(), 1);
        let names: Vec<&str> = Dtype::ALL.iter().map(|d| d.name()).collect();
        assert_eq!(names, ["f64", "f32", "i64", "i32", "u8"]);
        assert_eq!(OpName::ALL.map(OpName::name)[6], "bxor");
    }
}

/// What a rank's buffers hold when a timed call starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cache {
    /// One buffer per rank, reused by every call as the last call left it (the default, as
    /// OSU's benchmarks measure).
    #[default]
    Warm,
    /// A different buffer every call, long out of the caches (`--cold`).
    Cold,
    /// One buffer per rank, its whole input written by its rank before every call, outside
    /// the timed window (`--touch`): what a solver or a training step hands a collective, so
    /// that no algorithm profits from data a previous call left where it reads it.
    Touch,
}

impl Cache {
    /// The name in the results (`warm`, `cold`, `touch`).
    pub fn name(self) -> &'static str {
        match self {
            Cache::Warm => "warm",
            Cache::Cold => "cold",
            Cache::Touch => "touch",
        }
    }
}
