/**
 * The version `mcore --version` prints (this package's).
 *
 * @since 0.1.0
 */
export const version = "0.1.0"
