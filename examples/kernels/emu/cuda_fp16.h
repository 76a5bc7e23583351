// emulation stand-in: __half is float (inputs are generated as exactly representable halves)
#pragma once
typedef float __half;
inline float __half2float(__half h) { return h; }
inline __half __float2half(float f) { return f; }
