/* What fastpack's two C extensions over libjpeg-turbo (reader/image/_jpeg_crop.c, the window
 * decoder, and compiler/images/_jpeg_baseline.c, the baseline transcoder) do alike with the
 * untrusted bytes they read:
 * - they require libjpeg-turbo 2.1.3 or later;
 * - libjpeg's errors and warnings end the call with libjpeg's message (ErrorManager);
 * - the memory libjpeg may use (max_memory) and the number of scans it reads (max_scans) are
 *   limited, with the same defaults, and given from Python the same way (parse_limits);
 * - a progressive file with a coefficient never sent, or never refined to its last bit, is
 *   refused once all its input is read (require_complete).
 *
 * Every function is static: each extension compiles this header into itself and is built
 * alone. Include it after <Python.h>.
 */
#ifndef FASTPACK_JPEG_LIMITS_H
#define FASTPACK_JPEG_LIMITS_H

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>

#include <jpeglib.h>

#include <jerror.h>

#ifndef LIBJPEG_TURBO_VERSION_NUMBER
#error "needs libjpeg-turbo's jpeglib.h"
#endif
/* libjpeg-turbo 2.1.3 fixed the last known crash in the decoder paths fastpack uses: merged
 * (fast) upsampling of a 4:2:0 image with jpeg_crop_scanline; earlier releases fixed
 * jpeg_skip_scanlines with merged upsampling and with progressive files. Both extensions
 * require it, so that an older library builds neither (setup.py marks them optional) and
 * fastpack decodes with simplejpeg. */
#if LIBJPEG_TURBO_VERSION_NUMBER < 2001003
#error "needs libjpeg-turbo 2.1.3 or later"
#endif

#define DEFAULT_MAX_MEMORY (1L << 30)
#define DEFAULT_MAX_SCANS 500 /* libjpeg-turbo's own tools stop at 500 */
#define MESSAGE_BYTES 256     /* more than libjpeg's JMSG_LENGTH_MAX */

/* Every failure, libjpeg's or the extension's own, writes `message` and jumps to `escape`. */
typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf escape;
    int incomplete; /* the failure is an incomplete progressive file */
    char message[MESSAGE_BYTES];
} ErrorManager;

static void raise_error(j_common_ptr cinfo) {
    ErrorManager *err = (ErrorManager *)cinfo->err;
    if (err->pub.msg_code == JERR_NO_BACKING_STORE) /* what libjpeg does past the limit */
        snprintf(err->message, sizeof(err->message),
                 "the image's coefficients need more than the memory limit of %ld bytes "
                 "(max_memory)",
                 cinfo->mem->max_memory_to_use);
    else
        (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->escape, 1);
}

/* An error of the extension's own, with a printf-style message. */
static void fail(j_common_ptr cinfo, const char *format, ...) {
    ErrorManager *err = (ErrorManager *)cinfo->err;
    va_list args;
    va_start(args, format);
    vsnprintf(err->message, sizeof(err->message), format, args);
    va_end(args);
    longjmp(err->escape, 1);
}

/* Warnings (corrupt data that libjpeg would paper over) are errors, as in simplejpeg's strict
 * mode: a damaged file is neither stored nor decoded as if it were whole. Trace messages are
 * ignored. */
static void on_message(j_common_ptr cinfo, int level) {
    if (level < 0) raise_error(cinfo);
}

/* libjpeg's standard error manager with the two handlers above; the caller still calls
 * setjmp(err->escape) before any libjpeg call. */
static struct jpeg_error_mgr *use_errors(ErrorManager *err) {
    struct jpeg_error_mgr *pub = jpeg_std_error(&err->pub);
    err->pub.error_exit = raise_error;
    err->pub.emit_message = on_message;
    err->incomplete = 0;
    return pub;
}

typedef struct {
    struct jpeg_progress_mgr pub;
    int max_scans;
} ScanLimit;

/* libjpeg calls this between chunks of input; a new scan is counted at its SOS. */
static void limit_scans(j_common_ptr cinfo) {
    ScanLimit *limit = (ScanLimit *)cinfo->progress;
    if (cinfo->is_decompressor &&
        ((j_decompress_ptr)cinfo)->input_scan_number > limit->max_scans)
        fail(cinfo, "the JPEG has more than %d scans (max_scans)", limit->max_scans);
}

/* The memory limit and the scan limit on a decompressor just created; `limit` must outlive
 * it. */
static void use_limits(j_decompress_ptr cinfo, ScanLimit *limit, long max_memory,
                       int max_scans) {
    cinfo->mem->max_memory_to_use = max_memory;
    limit->max_scans = max_scans;
    limit->pub.progress_monitor = limit_scans;
    cinfo->progress = &limit->pub;
}

/* `value` (a Python int) as a long in [low, high]; else -1 with ValueError (TypeError for what
 * is not an int). */
static int bounded_long(PyObject *value, const char *name, long low, long high, long *out) {
    int overflow;
    long number = PyLong_AsLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) return -1;
    if (overflow != 0 || number < low || number > high) {
        PyErr_Format(PyExc_ValueError, "%s must be %ld to %ld, got %S", name, low, high, value);
        return -1;
    }
    *out = number;
    return 0;
}

/* The keyword arguments max_memory and max_scans (NULL where not given: the defaults),
 * checked; -1 with the exception set. */
static int parse_limits(PyObject *max_memory, PyObject *max_scans, long *memory, int *scans) {
    long value = DEFAULT_MAX_SCANS;
    *memory = DEFAULT_MAX_MEMORY;
    if (max_memory != NULL && bounded_long(max_memory, "max_memory", 1, LONG_MAX, memory) < 0)
        return -1;
    if (max_scans != NULL && bounded_long(max_scans, "max_scans", 1, INT_MAX, &value) < 0)
        return -1;
    *scans = (int)value;
    return 0;
}

/* Once all input is read: every coefficient of every component of a progressive file was sent
 * and refined to its last bit (coef_bits 0; -1 is never sent, n > 0 is n low bits missing). */
static void require_complete(j_decompress_ptr cinfo) {
    if (!cinfo->progressive_mode || cinfo->coef_bits == NULL) return;
    for (int c = 0; c < cinfo->num_components; c++) {
        for (int k = 0; k < DCTSIZE2; k++) {
            int missing = cinfo->coef_bits[c][k];
            if (missing == 0) continue;
            ((ErrorManager *)cinfo->err)->incomplete = 1;
            if (missing < 0)
                fail((j_common_ptr)cinfo,
                     "incomplete progressive JPEG: coefficient %d (zigzag order) of component "
                     "%d of %d was never sent",
                     k, c + 1, cinfo->num_components);
            fail((j_common_ptr)cinfo,
                 "incomplete progressive JPEG: coefficient %d (zigzag order) of component %d "
                 "of %d was never refined: its last %d bit(s) are missing",
                 k, c + 1, cinfo->num_components, missing);
        }
    }
}

#endif
