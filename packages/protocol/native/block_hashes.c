/*
 * Native accelerator for the prefix-routing block hashes (PROTOCOL.md, "Block hashes").
 *
 * Why native: the chain is one SHA-256 per block, each over the previous digest and the
 * block. From JavaScript every block costs a call into node:crypto, and that per-call
 * overhead, not hashing, dominates on small blocks. Here the whole chain is one call, and
 * SHA-256 is OpenSSL's own (the copy inside the node binary, with SHA-NI where the CPU has
 * it), so nothing but Node's headers is needed to build.
 *
 * The JavaScript side validates arguments and allocates the output; this file only hashes.
 */
#define NAPI_VERSION 8
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_Init & co.: no EVP lookup per block */
#include <node_api.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HASH_MODULUS 0x7fffffffffffffffULL /* 2^63 - 1 */

static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Token ids of block `b` as little-endian signed int64: the bytes Python hashes. */
#define WRITE_BLOCK(T, CONVERT)                                   \
  do {                                                            \
    const T *src = (const T *)tokens + (size_t)b * block_size;   \
    for (size_t k = 0; k < block_size; k++)                       \
      put_le64(block + 8 * k, (uint64_t)(CONVERT(src[k])));      \
  } while (0)
#define AS_INT64(x) ((int64_t)(x))

static napi_value throw_type_error(napi_env env, const char *message) {
  napi_throw_type_error(env, NULL, message);
  return NULL;
}

/* chain(tokens: TypedArray, blockSizeTokens: number, parent: Uint8Array(32), out: BigUint64Array)
 * writes one hash per element of `out`, hashing the first out.length * blockSizeTokens tokens. */
static napi_value chain(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 4)
    return throw_type_error(env, "chain expects (tokens, blockSizeTokens, parent, out)");

  napi_typedarray_type token_type, parent_type, out_type;
  size_t token_count, parent_length, block_count;
  void *tokens, *parent_data, *out_data;
  int64_t block_size_signed;
  const int typed_arguments[3] = {0, 2, 3};
  for (int i = 0; i < 3; i++) {
    bool is_typed;
    if (napi_is_typedarray(env, argv[typed_arguments[i]], &is_typed) != napi_ok || !is_typed)
      return throw_type_error(env, "tokens, parent and out must be typed arrays");
  }
  if (napi_get_typedarray_info(env, argv[0], &token_type, &token_count, &tokens, NULL, NULL) != napi_ok ||
      napi_get_value_int64(env, argv[1], &block_size_signed) != napi_ok ||
      napi_get_typedarray_info(env, argv[2], &parent_type, &parent_length, &parent_data, NULL, NULL) != napi_ok ||
      napi_get_typedarray_info(env, argv[3], &out_type, &block_count, &out_data, NULL, NULL) != napi_ok)
    return throw_type_error(env, "chain: unreadable arguments");
  if (parent_type != napi_uint8_array || parent_length != SHA256_DIGEST_LENGTH)
    return throw_type_error(env, "parent must be a Uint8Array of 32 bytes");
  if (out_type != napi_biguint64_array)
    return throw_type_error(env, "out must be a BigUint64Array");
  if (block_size_signed < 1) return throw_type_error(env, "blockSizeTokens must be positive");
  size_t block_size = (size_t)block_size_signed;
  if (block_count > 0 && block_size > token_count / block_count)
    return throw_type_error(env, "out has more elements than complete blocks");
  if (block_count == 0) return NULL;

  unsigned char *block = malloc(8 * block_size);
  if (block == NULL) return throw_type_error(env, "out of memory");
  unsigned char digest[SHA256_DIGEST_LENGTH];
  memcpy(digest, parent_data, SHA256_DIGEST_LENGTH);
  uint64_t *out = (uint64_t *)out_data;
  for (size_t b = 0; b < block_count; b++) {
    switch (token_type) {
      case napi_uint8_array: WRITE_BLOCK(uint8_t, AS_INT64); break;
      case napi_int16_array: WRITE_BLOCK(int16_t, AS_INT64); break;
      case napi_uint16_array: WRITE_BLOCK(uint16_t, AS_INT64); break;
      case napi_int32_array: WRITE_BLOCK(int32_t, AS_INT64); break;
      case napi_uint32_array: WRITE_BLOCK(uint32_t, AS_INT64); break;
      case napi_float64_array: WRITE_BLOCK(double, AS_INT64); break;
      default:
        free(block);
        return throw_type_error(env, "unsupported token array type");
    }
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, digest, SHA256_DIGEST_LENGTH);
    SHA256_Update(&ctx, block, 8 * block_size);
    SHA256_Final(digest, &ctx);
    out[b] = get_le64(digest) % HASH_MODULUS + 1;
  }
  free(block);
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "chain", NAPI_AUTO_LENGTH, chain, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "chain", fn) != napi_ok)
    return NULL;
  return exports;
}
