//! The I/O functions of the built-in types: `pg_type.typinput`,
//! `typoutput`, `typreceive` and `typsend` with PostgreSQL 15's OIDs and
//! names, so that `regproc` values read and print as in PostgreSQL
//! (pgjdbc tells array types by `typinput = 'array_in'::regproc`).
//!
//! Owns: that table (copied from PostgreSQL 15's pg_type and pg_proc).
//! Must not: define functions ripple can call (they are names only).

/// The array types' I/O functions: `array_in`, `array_out`, `array_recv`,
/// `array_send`.
const ARRAY_IO: [u32; 4] = [750, 751, 2400, 2401];

/// Type OID → its input, output, receive and send functions' OIDs.
const TYPE_IO: &[(u32, [u32; 4])] = &[
    (16, [1242, 1243, 2436, 2437]),
    (17, [1244, 31, 2412, 2413]),
    (18, [1245, 33, 2434, 2435]),
    (19, [34, 35, 2422, 2423]),
    (20, [460, 461, 2408, 2409]),
    (21, [38, 39, 2404, 2405]),
    (22, [40, 41, 2410, 2411]),
    (23, [42, 43, 2406, 2407]),
    (24, [44, 45, 2444, 2445]),
    (25, [46, 47, 2414, 2415]),
    (26, [1798, 1799, 2418, 2419]),
    (30, [54, 55, 2420, 2421]),
    (700, [200, 201, 2424, 2425]),
    (701, [214, 215, 2426, 2427]),
    (1042, [1044, 1045, 2430, 2431]),
    (1043, [1046, 1047, 2432, 2433]),
    (1082, [1084, 1085, 2468, 2469]),
    (1114, [1312, 1313, 2474, 2475]),
    (1184, [1150, 1151, 2476, 2477]),
    (1186, [1160, 1161, 2478, 2479]),
    (1700, [1701, 1702, 2460, 2461]),
    (2205, [2218, 2219, 2452, 2453]),
    (2206, [2220, 2221, 2454, 2455]),
    (2950, [2952, 2953, 2961, 2962]),
    (3802, [3806, 3804, 3805, 3803]),
    (4089, [4084, 4085, 4087, 4088]),
    (4096, [4098, 4092, 4094, 4095]),
];

/// Function OID → name, for every function of `TYPE_IO` and `ARRAY_IO`.
pub const IO_PROCS: &[(u32, &str)] = &[
    (31, "byteaout"),
    (33, "charout"),
    (34, "namein"),
    (35, "nameout"),
    (38, "int2in"),
    (39, "int2out"),
    (40, "int2vectorin"),
    (41, "int2vectorout"),
    (42, "int4in"),
    (43, "int4out"),
    (44, "regprocin"),
    (45, "regprocout"),
    (46, "textin"),
    (47, "textout"),
    (54, "oidvectorin"),
    (55, "oidvectorout"),
    (200, "float4in"),
    (201, "float4out"),
    (214, "float8in"),
    (215, "float8out"),
    (460, "int8in"),
    (461, "int8out"),
    (750, "array_in"),
    (751, "array_out"),
    (1044, "bpcharin"),
    (1045, "bpcharout"),
    (1046, "varcharin"),
    (1047, "varcharout"),
    (1084, "date_in"),
    (1085, "date_out"),
    (1150, "timestamptz_in"),
    (1151, "timestamptz_out"),
    (1160, "interval_in"),
    (1161, "interval_out"),
    (1242, "boolin"),
    (1243, "boolout"),
    (1244, "byteain"),
    (1245, "charin"),
    (1312, "timestamp_in"),
    (1313, "timestamp_out"),
    (1701, "numeric_in"),
    (1702, "numeric_out"),
    (1798, "oidin"),
    (1799, "oidout"),
    (2218, "regclassin"),
    (2219, "regclassout"),
    (2220, "regtypein"),
    (2221, "regtypeout"),
    (2400, "array_recv"),
    (2401, "array_send"),
    (2404, "int2recv"),
    (2405, "int2send"),
    (2406, "int4recv"),
    (2407, "int4send"),
    (2408, "int8recv"),
    (2409, "int8send"),
    (2410, "int2vectorrecv"),
    (2411, "int2vectorsend"),
    (2412, "bytearecv"),
    (2413, "byteasend"),
    (2414, "textrecv"),
    (2415, "textsend"),
    (2418, "oidrecv"),
    (2419, "oidsend"),
    (2420, "oidvectorrecv"),
    (2421, "oidvectorsend"),
    (2422, "namerecv"),
    (2423, "namesend"),
    (2424, "float4recv"),
    (2425, "float4send"),
    (2426, "float8recv"),
    (2427, "float8send"),
    (2430, "bpcharrecv"),
    (2431, "bpcharsend"),
    (2432, "varcharrecv"),
    (2433, "varcharsend"),
    (2434, "charrecv"),
    (2435, "charsend"),
    (2436, "boolrecv"),
    (2437, "boolsend"),
    (2444, "regprocrecv"),
    (2445, "regprocsend"),
    (2452, "regclassrecv"),
    (2453, "regclasssend"),
    (2454, "regtyperecv"),
    (2455, "regtypesend"),
    (2460, "numeric_recv"),
    (2461, "numeric_send"),
    (2468, "date_recv"),
    (2469, "date_send"),
    (2474, "timestamp_recv"),
    (2475, "timestamp_send"),
    (2476, "timestamptz_recv"),
    (2477, "timestamptz_send"),
    (2478, "interval_recv"),
    (2479, "interval_send"),
    (2952, "uuid_in"),
    (2953, "uuid_out"),
    (2961, "uuid_recv"),
    (2962, "uuid_send"),
    (3803, "jsonb_send"),
    (3804, "jsonb_out"),
    (3805, "jsonb_recv"),
    (3806, "jsonb_in"),
    (4084, "regnamespacein"),
    (4085, "regnamespaceout"),
    (4087, "regnamespacerecv"),
    (4088, "regnamespacesend"),
    (4092, "regroleout"),
    (4094, "regrolerecv"),
    (4095, "regrolesend"),
    (4098, "regrolein"),
];

/// The input, output, receive and send functions of type `oid` (an array
/// type's are `array_in`...), or zeros for a type not in the table.
pub fn type_io(oid: u32, is_array: bool) -> [u32; 4] {
    if is_array {
        return ARRAY_IO;
    }
    TYPE_IO.iter().find(|(t, _)| *t == oid).map_or([0; 4], |(_, io)| *io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::types::builtin_types;

    #[test]
    fn every_builtin_type_has_named_io_functions() {
        for ty in builtin_types() {
            let io = type_io(ty.oid(), ty.is_array());
            for f in io {
                assert!(IO_PROCS.iter().any(|(o, _)| *o == f), "{ty}: function {f} has no name");
            }
        }
        assert_eq!(type_io(23, false), [42, 43, 2406, 2407]);
        assert_eq!(type_io(1007, true), ARRAY_IO);
    }
}
