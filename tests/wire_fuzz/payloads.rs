//! Message payloads: parameter values in text and binary for each type,
//! COPY data, unknown types, bad lengths and byte mutations.

use super::*;

/// A text-format value for a type: valid, edge, or garbage.
pub(crate) fn text_value(rng: &mut Rng, oid: u32) -> Vec<u8> {
    if rng.percent(15) {
        return random_text(rng);
    }
    let choices: &[&str] = match oid {
        16 => &["t", "f", "true", "yes", "2", ""],
        20 | 21 | 23 => &[
            "0",
            "1",
            "-1",
            "32768",
            "2147483648",
            "-9223372036854775809",
            "1.5",
            " 42 ",
            "0x10",
            "",
        ],
        700 | 701 => &["1.5", "NaN", "-Infinity", "1e400", "-0", "1e-400", "abc"],
        1700 => &[
            "1.5",
            "NaN",
            "Infinity",
            "1e131072",
            "-1e-16383",
            "123456789012345678901234567890.123",
            "1e",
        ],
        1082 => &[
            "2024-02-29",
            "2023-02-29",
            "infinity",
            "-infinity",
            "5874898-01-01",
            "4714-11-24 BC",
            "0000-00-00",
        ],
        1114 | 1184 => &[
            "2024-01-02 03:04:05",
            "294277-01-01",
            "infinity",
            "2024-13-01",
            "epoch",
            "allballs",
        ],
        1186 => &[
            "1 day",
            "-178956970 years",
            "P1Y2M",
            "1 fortnight",
            "9223372036854775807 microseconds",
        ],
        17 => &["\\x0102", "\\x0g", "\\x0", "abc\\\\", "\\"],
        2950 => &[
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc999c0b4ef8bb6d6bb9bd380a11}",
            "a0eebc99",
            "",
        ],
        114 | 3802 => &[
            "{\"a\": 1}",
            "[1, 2, {\"b\": null}]",
            "{\"a\": ",
            "1e1000",
            "\"\\ud800\"",
            "nul",
        ],
        1007 | 1016 => &[
            "{1,2,3}",
            "{}",
            "{NULL}",
            "{{1,2},{3,4}}",
            "{1,{2}}",
            "{",
            "[0:1]={1,2}",
            "{2147483648}",
        ],
        1009 => &["{a,b}", "{\"a,b\",NULL}", "{\"}", "{{a}}"],
        _ => &["abc", "", "x\u{e9}"],
    };
    let mut v = rng.pick(choices).as_bytes().to_vec();
    if rng.percent(5) {
        let depth = rng.pick(&[100, 10_000, 100_000]);
        v = match oid {
            114 | 3802 => format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes(),
            _ => format!("{}1{}", "{".repeat(depth), "}".repeat(depth)).into_bytes(),
        };
    }
    v
}

/// A binary-format value for a type: valid, edge, mutated or random.
pub(crate) fn binary_value(rng: &mut Rng, oid: u32) -> Vec<u8> {
    if rng.percent(12) {
        let len = rng.below(17);
        return rng.bytes(len);
    }
    let mut v = match oid {
        16 => vec![rng.pick(&[0, 1, 2, 0xff])],
        21 => (rng.i32() as i16).to_be_bytes().to_vec(),
        23 | 1082 => rng.i32().to_be_bytes().to_vec(),
        20 | 1114 | 1184 => rng.i64().to_be_bytes().to_vec(),
        700 => rng
            .pick(&[
                1.5f32,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                -0.0,
                f32::MIN_POSITIVE,
            ])
            .to_be_bytes()
            .to_vec(),
        701 => rng
            .pick(&[
                1.5f64,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                f64::MAX,
            ])
            .to_be_bytes()
            .to_vec(),
        1186 => {
            let mut v = rng.i64().to_be_bytes().to_vec();
            v.extend(rng.i32().to_be_bytes());
            v.extend(rng.i32().to_be_bytes());
            v
        }
        1700 => numeric_binary(rng),
        17 => {
            let len = rng.len();
            rng.bytes(len)
        }
        2950 => {
            let len = rng.pick(&[16, 16, 16, 15, 17, 0]);
            rng.bytes(len)
        }
        3802 => {
            let mut v = vec![if rng.percent(80) { 1 } else { rng.byte() }];
            v.extend(text_value(rng, 3802));
            v
        }
        1007 => array_binary(rng, 23),
        1016 => array_binary(rng, 20),
        1009 => array_binary(rng, 25),
        _ => text_value(rng, oid),
    };
    if rng.percent(10) {
        mutate(rng, &mut v);
    }
    v
}

/// NUMERIC's binary form: ndigits, weight, sign, dscale, base-10000 digits;
/// the header fields are sometimes out of range or disagree with the digits.
pub(crate) fn numeric_binary(rng: &mut Rng) -> Vec<u8> {
    let ndigits = rng.below(6);
    let declared = if rng.percent(85) {
        ndigits as u16
    } else {
        rng.pick(&[0xffff, 0x8000, ndigits as u16 + 1])
    };
    let weight: i16 = if rng.percent(70) {
        rng.below(8) as i16 - 4
    } else {
        rng.pick(&[i16::MAX, i16::MIN, -1000, 1000])
    };
    let sign: u16 = rng.pick(&[0x0000, 0x0000, 0x4000, 0xc000, 0xd000, 0xf000, 0x1234]);
    let dscale: u16 = if rng.percent(80) {
        rng.below(20) as u16
    } else {
        rng.pick(&[0x3fff, 0x4000, 0xffff])
    };
    let mut v = Vec::new();
    v.extend(declared.to_be_bytes());
    v.extend(weight.to_be_bytes());
    v.extend(sign.to_be_bytes());
    v.extend(dscale.to_be_bytes());
    for _ in 0..ndigits {
        let d: i16 = if rng.percent(85) {
            rng.below(10_000) as i16
        } else {
            rng.pick(&[10_000, -1, i16::MAX])
        };
        v.extend(d.to_be_bytes());
    }
    v
}

/// An array's binary form: ndim, has-null flag, element type, dimensions
/// (size, lower bound), elements; sizes are sometimes huge or negative.
pub(crate) fn array_binary(rng: &mut Rng, elem: u32) -> Vec<u8> {
    let ndim: i32 = if rng.percent(75) {
        1
    } else {
        rng.pick(&[0, 2, 6, 7, -1, i32::MAX])
    };
    let mut v = Vec::new();
    v.extend(ndim.to_be_bytes());
    v.extend((if rng.percent(80) { 0i32 } else { rng.i32() }).to_be_bytes());
    v.extend(
        (if rng.percent(85) {
            elem
        } else {
            rng.pick(OIDS)
        })
        .to_be_bytes(),
    );
    let mut total: usize = 1;
    for _ in 0..ndim.clamp(0, 7) {
        let size: i32 = if rng.percent(80) {
            rng.below(4) as i32
        } else {
            rng.pick(&[i32::MAX, -1, 0x10000, 65_536])
        };
        let lbound: i32 = if rng.percent(80) { 1 } else { rng.i32() };
        v.extend(size.to_be_bytes());
        v.extend(lbound.to_be_bytes());
        total = total.saturating_mul(size.max(0) as usize);
    }
    if ndim <= 0 {
        total = 0;
    }
    for _ in 0..total.min(8) {
        if rng.percent(10) {
            v.extend((-1i32).to_be_bytes());
            continue;
        }
        let e = match elem {
            23 => rng.i32().to_be_bytes().to_vec(),
            20 => rng.i64().to_be_bytes().to_vec(),
            _ => random_text(rng),
        };
        let len = if rng.percent(90) {
            e.len() as i32
        } else {
            rng.pick(&[-2, i32::MAX, e.len() as i32 + 1])
        };
        v.extend(len.to_be_bytes());
        v.extend(e);
    }
    v
}

/// COPY scratch FROM STDIN, simple or extended, in text, CSV or binary,
/// with data split at random points and sometimes mutated, then CopyDone,
/// CopyFail, or something unexpected.
pub(crate) fn gen_copy_in(rng: &mut Rng, case: &mut Case) {
    let columns: Vec<(&str, u32)> = match rng.below(4) {
        0 => SCRATCH_COLUMNS.to_vec(),
        1 => vec![SCRATCH_COLUMNS[0], SCRATCH_COLUMNS[4]],
        2 => vec![SCRATCH_COLUMNS[10], SCRATCH_COLUMNS[11], SCRATCH_COLUMNS[2]],
        _ => (0..1 + rng.below(4))
            .map(|_| rng.pick(SCRATCH_COLUMNS))
            .collect(),
    };
    let list = if columns.len() == SCRATCH_COLUMNS.len() && rng.percent(50) {
        String::new()
    } else {
        format!(
            " ({})",
            columns.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
        )
    };
    let format = rng.below(3);
    let options: &str = match format {
        0 => rng.pick(&[
            "",
            " (FORMAT text)",
            " WITH (FORMAT text, DELIMITER '|', NULL 'nil')",
            " (FORMAT text, HEADER)",
        ]),
        1 => rng.pick(&[
            " (FORMAT csv)",
            " (FORMAT csv, HEADER true)",
            " (FORMAT csv, QUOTE '''', ESCAPE '\\')",
            " (FORMAT csv, DELIMITER ';', NULL '<null>')",
        ]),
        _ => " (FORMAT binary)",
    };
    let sql = format!("COPY scratch{list} FROM STDIN{options}");
    let extended = rng.percent(25);
    if extended {
        case.ok(parse(b"", sql.as_bytes(), &[]));
        case.ok(bind(b"", b"", &[], &[], &[]));
        case.ok(execute(b"", 0));
        if rng.percent(50) {
            // rust-postgres pipelines a Sync right after the Execute.
            case.ok(sync());
        }
    } else {
        case.ok(query(sql.as_bytes()));
    }
    let rows = rng.below(6);
    let mut data: Vec<u8> = match format {
        0 | 1 => {
            let delimiter = if options.contains("'|'") {
                b'|'
            } else if options.contains("';'") {
                b';'
            } else if format == 1 {
                b','
            } else {
                b'\t'
            };
            let mut d = Vec::new();
            if options.contains("HEADER") {
                d.extend(
                    columns
                        .iter()
                        .map(|c| c.0)
                        .collect::<Vec<_>>()
                        .join(&(delimiter as char).to_string())
                        .bytes(),
                );
                d.push(b'\n');
            }
            for _ in 0..rows {
                let ncols = if rng.percent(90) {
                    columns.len()
                } else {
                    rng.below(columns.len() + 2)
                };
                for c in 0..ncols {
                    if c > 0 {
                        d.push(delimiter);
                    }
                    let oid = columns.get(c).map_or(25, |c| c.1);
                    match rng.below(12) {
                        0 => d.extend_from_slice(if format == 0 { b"\\N" } else { b"" }),
                        1 if format == 1 => {
                            d.push(b'"');
                            d.extend(text_value(rng, oid));
                            if rng.percent(80) {
                                d.push(b'"');
                            }
                        }
                        2 if format == 0 => d.extend_from_slice(rng.pick(&[
                            &b"\\"[..],
                            b"\\x",
                            b"\\400",
                            b"\\.",
                            b"\\r\\n",
                        ])),
                        _ => d.extend(text_value(rng, oid)),
                    }
                }
                d.extend_from_slice(if rng.percent(90) { b"\n" } else { b"\r\n" });
            }
            if rng.percent(20) {
                d.extend_from_slice(b"\\.\n");
            }
            d
        }
        _ => {
            let mut d = b"PGCOPY\n\xff\r\n\0".to_vec();
            d.extend(
                (if rng.percent(90) {
                    0u32
                } else {
                    rng.pick(&[1 << 16, 1, u32::MAX])
                })
                .to_be_bytes(),
            );
            let ext = if rng.percent(90) { 0 } else { rng.below(8) };
            d.extend(
                (if rng.percent(95) {
                    ext as i32
                } else {
                    rng.i32()
                })
                .to_be_bytes(),
            );
            d.extend(rng.bytes(ext));
            for _ in 0..rows {
                let nfields = if rng.percent(90) {
                    columns.len() as i16
                } else {
                    rng.pick(&[0, -1, 1, i16::MAX])
                };
                d.extend(nfields.to_be_bytes());
                for &(_, oid) in &columns {
                    if rng.percent(10) {
                        d.extend((-1i32).to_be_bytes());
                        continue;
                    }
                    let value = binary_value(rng, oid);
                    let len = if rng.percent(95) {
                        value.len() as i32
                    } else {
                        rng.pick(&[-2, i32::MAX, 1 << 30])
                    };
                    d.extend(len.to_be_bytes());
                    d.extend(value);
                }
            }
            if rng.percent(90) {
                d.extend((-1i16).to_be_bytes());
            }
            d
        }
    };
    if rng.percent(20) {
        mutate(rng, &mut data);
    }
    // Split at random points into CopyData messages.
    let pieces = 1 + rng.below(4);
    let mut cuts: Vec<usize> = (0..pieces - 1).map(|_| rng.below(data.len() + 1)).collect();
    cuts.sort_unstable();
    let mut start = 0;
    for cut in cuts.into_iter().chain([data.len()]) {
        case.ok(copy_data(&data[start..cut]));
        start = cut;
    }
    match rng.below(100) {
        0..=69 => {
            case.ok(copy_done());
            if extended {
                case.ok(sync());
            }
        }
        70..=81 => case.ok(copy_fail(b"wire_fuzz says no")),
        82..=87 => case.ok(query(b"SELECT 1")),
        88..=91 => case.ok(parse(b"", b"SELECT 1", &[])),
        92..=95 => case.ok(if rng.percent(50) { sync() } else { flush() }),
        _ => {}
    }
}

/// CopyData, CopyDone and CopyFail where no COPY is running.
pub(crate) fn gen_copy_outside(rng: &mut Rng, case: &mut Case) {
    for _ in 0..1 + rng.below(3) {
        match rng.below(3) {
            0 => {
                let len = rng.len();
                case.ok(copy_data(&rng.bytes(len)));
            }
            1 => case.ok(copy_done()),
            _ => case.ok(copy_fail(b"nothing to fail")),
        }
    }
}

/// A message of a type the frontend never sends.
pub(crate) fn gen_unknown(rng: &mut Rng, case: &mut Case) {
    const FRONTEND: &[u8] = b"QPBEDCHSXdcfFp";
    let mut tag = rng.byte();
    while FRONTEND.contains(&tag) {
        tag = rng.byte();
    }
    let len = rng.len();
    case.bad(message(tag, &rng.bytes(len)));
}

/// A frontend message whose length field lies: negative, below 4, huge,
/// or a little off.
pub(crate) fn gen_bad_length(rng: &mut Rng, case: &mut Case) {
    let mut m = match rng.below(12) {
        0 => query(b"SELECT 1"),
        1 => parse(b"", b"SELECT $1", &[23]),
        2 => bind(b"", b"", &[1], &[Some(vec![0, 0, 0, 1])], &[]),
        3 => execute(b"", 0),
        4 => describe(b'S', b""),
        5 => close(b'P', b""),
        6 => copy_data(b"1\tx\n"),
        7 => copy_fail(b"x"),
        8 => message(b'p', b"secret\0"),
        9 => sync(),
        10 => flush(),
        _ => function_call(1, &[], &[], 0),
    };
    let actual = m.len() as i64 - 1;
    let len: i64 = rng.pick(&[
        0,
        1,
        2,
        3,
        -1,
        -4,
        i32::MIN as i64,
        i32::MAX as i64,
        0x3fff_fffe,
        0x4000_0000,
        actual + 1,
        actual + 7,
        actual - 1,
        (actual - 3).max(0),
    ]);
    m[1..5].copy_from_slice(&(len as i32).to_be_bytes());
    if rng.percent(30) {
        // Nothing of the body: the length is all there is.
        m.truncate(5);
    }
    case.bad(m);
}

/// Mutates `msg` in place: bit flips, interesting bytes, inserted, deleted
/// or duplicated ranges, a changed length field, truncation.
pub(crate) fn mutate(rng: &mut Rng, msg: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(3) {
        if msg.is_empty() {
            msg.push(rng.byte());
            continue;
        }
        let pos = rng.below(msg.len());
        match rng.below(8) {
            0 => msg[pos] ^= 1 << rng.below(8),
            1 => msg[pos] = rng.pick(&[0, 0xff, 0x7f, 0x80, b'$', b'\'', b'\\']),
            2 => {
                let n = 1 + rng.below(8);
                let bytes = rng.bytes(n);
                msg.splice(pos..pos, bytes);
            }
            3 => {
                let end = (pos + 1 + rng.below(8)).min(msg.len());
                msg.drain(pos..end);
            }
            4 => {
                let end = (pos + 1 + rng.below(16)).min(msg.len());
                let copy = msg[pos..end].to_vec();
                let at = rng.below(msg.len() + 1);
                msg.splice(at..at, copy);
            }
            5 => {
                // The length field: bytes 1..5 of a typed message, 0..4 of a packet.
                let at = if msg[0].is_ascii_alphabetic() { 1 } else { 0 };
                if msg.len() >= at + 4 {
                    let random = rng.next_u64() as u32;
                    let len: u32 =
                        rng.pick(&[0, 3, 4, 0xffff_ffff, 0x7fff_ffff, 0x8000_0000, random]);
                    msg[at..at + 4].copy_from_slice(&len.to_be_bytes());
                }
            }
            6 => msg.truncate(pos),
            _ => {
                if msg.len() >= pos + 2 {
                    let v: u16 = rng.pick(&[0xffff, 0x7fff, 0x8000, 0, 1]);
                    msg[pos..pos + 2].copy_from_slice(&v.to_be_bytes());
                }
            }
        }
    }
}
