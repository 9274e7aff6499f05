/* Transcode a JPEG to baseline without decoding it to pixels, with the system's libjpeg-turbo.
 *
 * The quantized DCT coefficients are read (jpeg_read_coefficients: the whole entropy-coded data,
 * every scan of a progressive file) and written again as one sequential scan with Huffman tables
 * optimized for them (jpeg_write_coefficients). The coefficients, quantization tables, sampling
 * factors and component ids do not change, so a decoder gives the same pixels as from the input.
 *
 * Markers: every APPn and COM segment of the input is written again, byte for byte and in order,
 * right after SOI; libjpeg writes no JFIF or Adobe segment of its own. The output therefore
 * holds the same EXIF, ICC profile, XMP and comments, and a decoder guesses the same colour
 * space (from JFIF, Adobe and component ids) as for the input. The input's restart markers are
 * not kept: the output has none (no DRI), or markers on a grid where asked (`restart_width`,
 * see restart_interval()): a reader can then decode only the intervals a crop needs, since the
 * DC predictors restart at each marker; bytes after the EOI are dropped.
 *
 * Refused (ValueError with the reason):
 * - data libjpeg cannot read, and data it warns about (corrupt data it would paper over);
 * - an incomplete progressive file (IncompleteProgressiveError, a ValueError): a coefficient of
 *   some component never sent, or never refined to its last bit (a scan missing, or an EOI
 *   between scans). A decoder smooths such an image between blocks, a baseline copy of the
 *   coefficients is not smoothed: its pixels would differ;
 * - an image whose coefficients need more than `max_memory` bytes (libjpeg's
 *   max_memory_to_use, checked before the coefficient buffers are allocated; the output buffer
 *   obeys the same limit), and a file of more than `max_scans` scans (each scan costs a pass
 *   over every block; libjpeg-turbo's own tools stop at 500).
 *
 * The output buffer belongs to this extension (a destination manager of its own, grown with
 * realloc), so it is freed exactly once whatever fails. The GIL is released for the whole
 * transcode.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libjpeg, the version it needs, the limits and parse_limits, ErrorManager, require_complete */
#include "jpeg_limits.h"

#define MAX_MARKER_BYTES 0xFFFF /* a whole segment's payload */
#define FIRST_OUTPUT_BYTES 16384
#define MAX_RESTART_WIDTH 65535    /* pixels: JPEG's widest image */
#define MAX_RESTART_INTERVAL 65535 /* MCUs: the DRI segment's 16 bits */

static PyObject *IncompleteProgressiveError;

/* The output: one buffer from malloc that the Job owns (libjpeg only writes into it), grown
 * by doubling up to `limit` bytes. */
typedef struct {
    struct jpeg_destination_mgr pub;
    unsigned char *buffer;
    size_t capacity, size, limit;
} Destination;

static void reserve(j_compress_ptr cinfo, Destination *dest, size_t capacity) {
    if (capacity > dest->limit) {
        if (dest->capacity >= dest->limit)
            fail((j_common_ptr)cinfo,
                 "the baseline output needs more than the memory limit of %zu bytes "
                 "(max_memory)",
                 dest->limit);
        capacity = dest->limit;
    }
    unsigned char *grown = realloc(dest->buffer, capacity);
    if (grown == NULL) /* dest->buffer is still valid, and still the Job's to free */
        fail((j_common_ptr)cinfo, "out of memory for %zu bytes of output", capacity);
    dest->buffer = grown;
    dest->capacity = capacity;
}

static void init_destination(j_compress_ptr cinfo) {
    Destination *dest = (Destination *)cinfo->dest;
    if (dest->buffer == NULL) reserve(cinfo, dest, FIRST_OUTPUT_BYTES);
    dest->pub.next_output_byte = dest->buffer;
    dest->pub.free_in_buffer = dest->capacity;
}

/* Called with the whole buffer full. */
static boolean empty_output_buffer(j_compress_ptr cinfo) {
    Destination *dest = (Destination *)cinfo->dest;
    size_t used = dest->capacity;
    reserve(cinfo, dest, used <= SIZE_MAX / 2 ? used * 2 : SIZE_MAX);
    dest->pub.next_output_byte = dest->buffer + used;
    dest->pub.free_in_buffer = dest->capacity - used;
    return TRUE;
}

static void term_destination(j_compress_ptr cinfo) {
    Destination *dest = (Destination *)cinfo->dest;
    dest->size = dest->capacity - dest->pub.free_in_buffer;
}

typedef struct {
    /* in */
    const unsigned char *data;
    size_t size;
    long max_memory;
    int max_scans, restart_width;
    /* out: dest.buffer holds dest.size bytes on success; the caller frees dest.buffer (which
     * may be set after a failure too) */
    Destination dest;
    int failed, incomplete;
    char message[MESSAGE_BYTES];
} Job;

/* The restart interval, in MCUs, for intervals about `width` pixels wide (0: none): the most
 * MCUs that divide an MCU row into equal intervals at most `width` wide, so that each row
 * starts with an interval; where those would be narrower than half of `width` (a row whose MCU
 * count has no divisor near it), a whole MCU row. */
static unsigned int restart_interval(j_decompress_ptr src, int width) {
    if (width <= 0) return 0;
    /* the MCU of the output's one scan: all components interleaved, or one 8 x 8 block */
    long mcu_w = DCTSIZE * (src->num_components > 1 ? src->max_h_samp_factor : 1);
    long per_row = ((long)src->image_width + mcu_w - 1) / mcu_w;
    long best = 0;
    for (long mcus = 1; mcus <= per_row && mcus * mcu_w <= width; mcus++)
        if (per_row % mcus == 0) best = mcus;
    if (best * mcu_w * 2 < width) best = per_row;
    return (unsigned int)(best < MAX_RESTART_INTERVAL ? best : MAX_RESTART_INTERVAL);
}

static void copy_markers(j_decompress_ptr src, j_compress_ptr dst) {
    for (jpeg_saved_marker_ptr m = src->marker_list; m != NULL; m = m->next)
        jpeg_write_marker(dst, m->marker, m->data, m->data_length);
}

/* Runs without the GIL. */
static void run(Job *job) {
    struct jpeg_decompress_struct src;
    struct jpeg_compress_struct dst;
    ErrorManager err; /* one for both objects: a failure in either jumps to the same place */
    ScanLimit limit;
    /* volatile: read after a longjmp */
    volatile int src_created = 0, dst_created = 0;

    src.err = dst.err = use_errors(&err);
    if (setjmp(err.escape)) {
        job->failed = 1;
        job->incomplete = err.incomplete;
        memcpy(job->message, err.message, sizeof(job->message));
        if (dst_created) jpeg_destroy_compress(&dst);
        if (src_created) jpeg_destroy_decompress(&src);
        return;
    }
    jpeg_create_decompress(&src);
    src_created = 1;
    jpeg_create_compress(&dst);
    dst_created = 1;
    use_limits(&src, &limit, job->max_memory, job->max_scans);
    dst.mem->max_memory_to_use = job->max_memory;

    jpeg_mem_src(&src, job->data, (unsigned long)job->size);
    jpeg_save_markers(&src, JPEG_COM, MAX_MARKER_BYTES);
    for (int n = 0; n < 16; n++) jpeg_save_markers(&src, JPEG_APP0 + n, MAX_MARKER_BYTES);
    jpeg_read_header(&src, TRUE);
    jvirt_barray_ptr *coefficients = jpeg_read_coefficients(&src);
    require_complete(&src);

    jpeg_copy_critical_parameters(&src, &dst);
    dst.write_JFIF_header = FALSE; /* the input's own APP0 and APP14, if any, are copied */
    dst.write_Adobe_marker = FALSE;
    dst.optimize_coding = TRUE;
    dst.restart_interval = restart_interval(&src, job->restart_width);
    dst.restart_in_rows = 0;
    job->dest.pub.init_destination = init_destination;
    job->dest.pub.empty_output_buffer = empty_output_buffer;
    job->dest.pub.term_destination = term_destination;
    job->dest.limit = (size_t)job->max_memory;
    dst.dest = &job->dest.pub;
    jpeg_write_coefficients(&dst, coefficients);
    copy_markers(&src, &dst);
    jpeg_finish_compress(&dst);
    jpeg_finish_decompress(&src);
    jpeg_destroy_compress(&dst);
    jpeg_destroy_decompress(&src);
}

PyDoc_STRVAR(to_baseline_doc,
"to_baseline(data, *, restart_width=0, max_memory=DEFAULT_MAX_MEMORY,\n"
"            max_scans=DEFAULT_MAX_SCANS)\n"
"\n"
"The JPEG `data` (a bytes-like object) transcoded losslessly to baseline: the same DCT\n"
"coefficients in one sequential scan with optimized Huffman tables, the input's APPn and COM\n"
"segments kept. With `restart_width` (1 to MAX_RESTART_WIDTH pixels; 0: none), restart\n"
"markers split every MCU row into equal intervals at most that wide (a whole row where\n"
"those would be under half of it). Returns bytes. Raises IncompleteProgressiveError (a ValueError) for a\n"
"progressive file with a coefficient never sent or never fully refined, and ValueError with\n"
"libjpeg's message when libjpeg cannot read the data or warns about it, when the transcode\n"
"needs more than `max_memory` bytes of libjpeg memory or output, or when the file has more\n"
"than `max_scans` scans.");

static PyObject *to_baseline(PyObject *module, PyObject *args, PyObject *kwargs) {
    (void)module;
    static char *keywords[] = {"data", "restart_width", "max_memory", "max_scans", NULL};
    Py_buffer data;
    PyObject *restart_width = NULL, *max_memory = NULL, *max_scans = NULL;
    long width = 0;
    Job job;
    memset(&job, 0, sizeof(job));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|$OOO", keywords, &data, &restart_width,
                                     &max_memory, &max_scans))
        return NULL;
    PyObject *result = NULL;
    if (parse_limits(max_memory, max_scans, &job.max_memory, &job.max_scans) < 0) goto done;
    if (restart_width != NULL &&
        bounded_long(restart_width, "restart_width", 0, MAX_RESTART_WIDTH, &width) < 0)
        goto done;
    job.restart_width = (int)width;
    if (data.len == 0) {
        PyErr_SetString(PyExc_ValueError, "empty data: not a JPEG");
        goto done;
    }
    job.data = data.buf;
    job.size = (size_t)data.len;
    Py_BEGIN_ALLOW_THREADS run(&job);
    Py_END_ALLOW_THREADS
    if (job.failed)
        PyErr_SetString(job.incomplete ? IncompleteProgressiveError : PyExc_ValueError,
                        job.message);
    else
        result = PyBytes_FromStringAndSize((const char *)job.dest.buffer,
                                           (Py_ssize_t)job.dest.size);
    free(job.dest.buffer);
done:
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"to_baseline", (PyCFunction)(void (*)(void))to_baseline, METH_VARARGS | METH_KEYWORDS,
     to_baseline_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jpeg_baseline",
    "Lossless transcodes of JPEGs to baseline with the system's libjpeg-turbo.", -1, methods,
};

PyMODINIT_FUNC PyInit__jpeg_baseline(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    IncompleteProgressiveError = PyErr_NewExceptionWithDoc(
        "fastpack.compiler.images._jpeg_baseline.IncompleteProgressiveError",
        "A progressive JPEG with a coefficient never sent or never refined to its last bit: "
        "its baseline transcode would not decode to the same pixels.",
        PyExc_ValueError, NULL);
    if (IncompleteProgressiveError == NULL ||
        PyModule_AddObjectRef(m, "IncompleteProgressiveError", IncompleteProgressiveError) < 0 ||
        PyModule_AddIntConstant(m, "LIBJPEG_TURBO_VERSION", LIBJPEG_TURBO_VERSION_NUMBER) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_MAX_MEMORY", DEFAULT_MAX_MEMORY) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_MAX_SCANS", DEFAULT_MAX_SCANS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_RESTART_WIDTH", MAX_RESTART_WIDTH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
