// The preprocessor side of node_ops.def: what turns one parameter sequence into a C++ parameter
// list, an argument list, a list of wire kinds, or struct members.
//
// In the .def, IN(T, n) is the tuple (in, T, n), OUT(T, n) is (out, T, n), IN_BYTES(N, n) is
// (inN, N, n) and OUT_BYTES(N, n) is (outN, N, n); a sequence of them, such as
// (in, uint64_t, va)(out, uint64_t, handle), is walked by two macros that call each other, one per
// element (the usual way to walk a sequence: a macro may not expand itself), and the walk ends
// when a name pasted with _END expands to nothing.
#pragma once

#define MCSIM_NODE_CAT(a, b) MCSIM_NODE_CAT_I(a, b)
#define MCSIM_NODE_CAT_I(a, b) a##b
// A comma that appears one scan late: the walk's output passes through MCSIM_NODE_CAT as one
// macro argument, which a plain comma would split.
#define MCSIM_NODE_EMPTY()
#define MCSIM_NODE_COMMA() ,
#define MCSIM_NODE_LATE_COMMA MCSIM_NODE_COMMA MCSIM_NODE_EMPTY() ()

// The C++ parameter list: `T n`, `T* n`, `const uint8_t n[N]`, `uint8_t n[N]`.
#define MCSIM_NODE_DECL_in(T, n) T n
#define MCSIM_NODE_DECL_out(T, n) T* n
#define MCSIM_NODE_DECL_inN(N, n) const uint8_t n[N]
#define MCSIM_NODE_DECL_outN(N, n) uint8_t n[N]
#define MCSIM_NODE_DECLS(seq) MCSIM_NODE_CAT(MCSIM_NODE_DECLS_0 seq, _END)
#define MCSIM_NODE_DECLS_0(d, T, n) MCSIM_NODE_DECL_##d(T, n) MCSIM_NODE_DECLS_1
#define MCSIM_NODE_DECLS_1(d, T, n) MCSIM_NODE_LATE_COMMA MCSIM_NODE_DECL_##d(T, n) MCSIM_NODE_DECLS_2
#define MCSIM_NODE_DECLS_2(d, T, n) MCSIM_NODE_LATE_COMMA MCSIM_NODE_DECL_##d(T, n) MCSIM_NODE_DECLS_1
#define MCSIM_NODE_DECLS_0_END
#define MCSIM_NODE_DECLS_1_END
#define MCSIM_NODE_DECLS_2_END

// The wire kinds (node_ops.h), comma-separated.
#define MCSIM_NODE_KIND_in(T, n) ::mcsim::fabric::wire::In<T>
#define MCSIM_NODE_KIND_out(T, n) ::mcsim::fabric::wire::Out<T>
#define MCSIM_NODE_KIND_inN(N, n) ::mcsim::fabric::wire::InBytes<N>
#define MCSIM_NODE_KIND_outN(N, n) ::mcsim::fabric::wire::OutBytes<N>
#define MCSIM_NODE_KINDS(seq) MCSIM_NODE_CAT(MCSIM_NODE_KINDS_0 seq, _END)
#define MCSIM_NODE_KINDS_0(d, T, n) MCSIM_NODE_KIND_##d(T, n) MCSIM_NODE_KINDS_1
#define MCSIM_NODE_KINDS_1(d, T, n) MCSIM_NODE_LATE_COMMA MCSIM_NODE_KIND_##d(T, n) MCSIM_NODE_KINDS_2
#define MCSIM_NODE_KINDS_2(d, T, n) MCSIM_NODE_LATE_COMMA MCSIM_NODE_KIND_##d(T, n) MCSIM_NODE_KINDS_1
#define MCSIM_NODE_KINDS_0_END
#define MCSIM_NODE_KINDS_1_END
#define MCSIM_NODE_KINDS_2_END

// The parameters' names, each after a comma (an argument list that follows others).
#define MCSIM_NODE_COMMA_NAMES(seq) MCSIM_NODE_CAT(MCSIM_NODE_NAMES_1 seq, _END)
#define MCSIM_NODE_NAMES_1(d, T, n) MCSIM_NODE_LATE_COMMA n MCSIM_NODE_NAMES_2
#define MCSIM_NODE_NAMES_2(d, T, n) MCSIM_NODE_LATE_COMMA n MCSIM_NODE_NAMES_1
#define MCSIM_NODE_NAMES_1_END
#define MCSIM_NODE_NAMES_2_END

// Struct members (NODE_WIRE): `std::decay_t<T> n{};`.
#define MCSIM_NODE_MEMBERS(seq) MCSIM_NODE_CAT(MCSIM_NODE_MEMBERS_1 seq, _END)
#define MCSIM_NODE_MEMBERS_1(d, T, n) std::decay_t<T> n{}; MCSIM_NODE_MEMBERS_2
#define MCSIM_NODE_MEMBERS_2(d, T, n) std::decay_t<T> n{}; MCSIM_NODE_MEMBERS_1
#define MCSIM_NODE_MEMBERS_1_END
#define MCSIM_NODE_MEMBERS_2_END

// The members of the struct `s`, comma-separated (a wire::Fields visit).
#define MCSIM_NODE_FIELDS(seq) MCSIM_NODE_CAT(MCSIM_NODE_FIELDS_0 seq, _END)
#define MCSIM_NODE_FIELDS_0(d, T, n) s.n MCSIM_NODE_FIELDS_1
#define MCSIM_NODE_FIELDS_1(d, T, n) MCSIM_NODE_LATE_COMMA s.n MCSIM_NODE_FIELDS_2
#define MCSIM_NODE_FIELDS_2(d, T, n) MCSIM_NODE_LATE_COMMA s.n MCSIM_NODE_FIELDS_1
#define MCSIM_NODE_FIELDS_0_END
#define MCSIM_NODE_FIELDS_1_END
#define MCSIM_NODE_FIELDS_2_END
