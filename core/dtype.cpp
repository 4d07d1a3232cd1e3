#include "tapegrad/core/dtype.hpp"

#include "tapegrad/core/error.hpp"

namespace tg {

std::size_t dtype_size(DType t) {
    switch (t) {
        case DType::f64: case DType::i64: return 8;
        case DType::f32: case DType::i32: return 4;
        case DType::f16: case DType::bf16: return 2;
        case DType::b8: return 1;
    }
    return 0;
}

const char* dtype_name(DType t) {
    switch (t) {
        case DType::f64: return "f64";
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::i64: return "i64";
        case DType::b8: return "bool";
    }
    return "?";
}

DType dtype_from_name(const std::string& name, const std::string& key) {
    for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::b8})
        if (name == dtype_name(t)) return t;
    fail(key, key, " '", name, "' is not one of f64, f32, f16, bf16, i32, i64, bool");
}

double dtype_epsilon(DType t) {
    switch (t) {
        case DType::f64: return 2.220446049250313e-16;
        case DType::f32: return 1.1920928955078125e-07;
        case DType::f16: return 9.765625e-04;
        case DType::bf16: return 7.8125e-03;
        default: return 0;
    }
}

}  // namespace tg
