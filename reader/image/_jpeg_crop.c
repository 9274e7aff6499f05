/* Decode only a window of a JPEG, at a DCT scale, with the system's libjpeg-turbo.
 *
 * libjpeg-turbo (>= 1.5) can skip rows above a window (jpeg_skip_scanlines: they are still
 * entropy-decoded, not transformed or colour-converted), decode a column range only
 * (jpeg_crop_scanline: the IDCT runs on the blocks inside it) and stop below it. Combined with
 * scale_num/scale_denom the window comes out at 1/2, 1/4 or 1/8 of full size.
 *
 * Exact pixels: fancy upsampling interpolates a chroma column from its neighbours, and a cropped
 * decode treats the window's edges as the image's. The window is therefore widened by one
 * column on each side (where the image has one) and those columns are returned with it; the
 * caller cuts them off. The same holds for rows: the decode starts one row above the window.
 * A window is also at least MIN_COLUMNS wide (see run()).
 *
 * Refused (ValueError, so that the caller decodes the whole image with simplejpeg instead):
 * - an incomplete progressive file (a coefficient never sent, or never refined to its last
 *   bit): libjpeg smooths such an image between blocks, and a window's smoothing differs from
 *   the whole image's at the window's edges;
 * - an image whose coefficient buffer (progressive and multi-scan files keep the whole image's
 *   coefficients) needs more than `max_memory` bytes (libjpeg's max_memory_to_use), and a file
 *   of more than `max_scans` scans (each costs a pass over every block; libjpeg-turbo's own
 *   tools stop at 500);
 * - window coordinates out of range (checked before any arithmetic on them).
 *
 * The GIL is released for the whole decode.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

/* libjpeg, the version it needs, the limits and parse_limits, ErrorManager, require_complete,
 * bounded_long */
#include "jpeg_limits.h"

#define MAX_SHIFT 3
#define MIN_COLUMNS 32
#define ROWS_PER_READ 16 /* rows asked of libjpeg per call: a whole row group */
/* Window coordinates, in pixels: far above JPEG's 65535, low enough that top + height and
 * left + width fit in a long anywhere. */
#define MAX_COORDINATE ((1L << 30) - 1)

typedef struct {
    /* in */
    const unsigned char *data;
    size_t size;
    int shift, fastdct, fastupsample, max_scans;
    long top, left, height, width; /* window, in pixels of the scaled image */
    long max_memory;
    unsigned char *out;
    size_t capacity;
    /* out */
    long x0, columns, y0, rows, image_height, image_width;
    int failed;
    char message[MESSAGE_BYTES];
} Job;

static long clamp(long value, long low, long high) {
    return value < low ? low : (value > high ? high : value);
}

/* Runs without the GIL. Fills job->out with rows x columns x 3 bytes (RGB) covering the window
 * widened by one pixel each way (clamped), and says where that block starts. */
static void run(Job *job) {
    struct jpeg_decompress_struct cinfo;
    ErrorManager err;
    ScanLimit limit;
    /* volatile: read after a longjmp */
    volatile int created = 0;

    cinfo.err = use_errors(&err);
    if (setjmp(err.escape)) {
        job->failed = 1;
        memcpy(job->message, err.message, sizeof(job->message));
        if (created) jpeg_destroy_decompress(&cinfo);
        return;
    }
    jpeg_create_decompress(&cinfo);
    created = 1;
    use_limits(&cinfo, &limit, job->max_memory, job->max_scans);
    jpeg_mem_src(&cinfo, job->data, (unsigned long)job->size);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB;
    cinfo.scale_num = 1;
    cinfo.scale_denom = 1u << job->shift;
    cinfo.dct_method = job->fastdct ? JDCT_IFAST : JDCT_ISLOW;
    cinfo.do_fancy_upsampling = job->fastupsample ? FALSE : TRUE;
    jpeg_start_decompress(&cinfo); /* reads a whole multi-scan file: coef_bits are final */
    require_complete(&cinfo);

    long image_h = (long)cinfo.output_height, image_w = (long)cinfo.output_width;
    job->image_height = image_h;
    job->image_width = image_w;
    long top = clamp(job->top, 0, image_h - 1), left = clamp(job->left, 0, image_w - 1);
    long bottom = clamp(job->top + job->height, top + 1, image_h);
    long right = clamp(job->left + job->width, left + 1, image_w);
    /* one pixel of context each way, where the image has it */
    long y0 = top > 0 ? top - 1 : 0, y1 = bottom < image_h ? bottom + 1 : bottom;
    long x0 = left > 0 ? left - 1 : 0, x1 = right < image_w ? right + 1 : right;
    /* libjpeg-turbo replaces fancy upsampling by plain replication for a component at most
     * 2 samples wide, which a narrow crop would be: keep the window wide enough. */
    if (x1 - x0 < MIN_COLUMNS) {
        x1 = x0 + MIN_COLUMNS < image_w ? x0 + MIN_COLUMNS : image_w;
        x0 = x1 - MIN_COLUMNS > 0 ? x1 - MIN_COLUMNS : 0;
    }

    JDIMENSION xoffset = (JDIMENSION)x0, columns = (JDIMENSION)(x1 - x0);
    if (columns < (JDIMENSION)image_w) jpeg_crop_scanline(&cinfo, &xoffset, &columns);
    size_t stride = (size_t)columns * 3;
    if ((size_t)(y1 - y0) * stride > job->capacity) {
        fail((j_common_ptr)&cinfo, "the output buffer holds %zu bytes, the window needs %zu",
             job->capacity, (size_t)(y1 - y0) * stride);
    }
    if (y0 > 0) {
        JDIMENSION skipped = jpeg_skip_scanlines(&cinfo, (JDIMENSION)y0);
        if (skipped != (JDIMENSION)y0) {
            fail((j_common_ptr)&cinfo, "skipped %u of %ld rows", skipped, y0);
        }
    }
    JSAMPROW rows[ROWS_PER_READ];
    for (long row = 0; row < y1 - y0;) {
        long batch = y1 - y0 - row < ROWS_PER_READ ? y1 - y0 - row : ROWS_PER_READ;
        for (long i = 0; i < batch; i++) rows[i] = job->out + (size_t)(row + i) * stride;
        JDIMENSION got = jpeg_read_scanlines(&cinfo, rows, (JDIMENSION)batch);
        if (got == 0) {
            fail((j_common_ptr)&cinfo, "the data ended at row %ld", y0 + row);
        }
        row += (long)got;
    }
    job->x0 = (long)xoffset;
    job->columns = (long)columns;
    job->y0 = y0;
    job->rows = y1 - y0;
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
}

/* `value` (a Python int) as a long; -1 with TypeError for what is not an int. `*overflow` is
 * -1 or 1 where it does not fit (the long is then meaningless). */
static int as_long(PyObject *value, long *out, int *overflow) {
    *out = PyLong_AsLongAndOverflow(value, overflow);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* The window and the limits from Python, checked; -1 with the exception set. */
static int parse_job(Job *job, PyObject *shift, PyObject *top, PyObject *left, PyObject *height,
                     PyObject *width, PyObject *max_memory, PyObject *max_scans) {
    long value;
    int height_overflow, width_overflow;
    if (bounded_long(shift, "shift", 0, MAX_SHIFT, &value) < 0) return -1;
    job->shift = (int)value;
    if (bounded_long(top, "top", 0, MAX_COORDINATE, &job->top) < 0 ||
        bounded_long(left, "left", 0, MAX_COORDINATE, &job->left) < 0 ||
        as_long(height, &job->height, &height_overflow) < 0 ||
        as_long(width, &job->width, &width_overflow) < 0)
        return -1;
    if (height_overflow < 0 || width_overflow < 0 || (height_overflow == 0 && job->height < 1) ||
        (width_overflow == 0 && job->width < 1)) {
        PyErr_Format(PyExc_ValueError, "the window must be at least 1x1, got %Sx%S", height,
                     width);
        return -1;
    }
    if (bounded_long(height, "height", 1, MAX_COORDINATE, &job->height) < 0 ||
        bounded_long(width, "width", 1, MAX_COORDINATE, &job->width) < 0)
        return -1;
    return parse_limits(max_memory, max_scans, &job->max_memory, &job->max_scans);
}

PyDoc_STRVAR(decode_window_doc,
"decode_window(data, shift, top, left, height, width, out, fastdct=False, fastupsample=False,\n"
"              *, max_memory=DEFAULT_MAX_MEMORY, max_scans=DEFAULT_MAX_SCANS)\n"
"\n"
"Decode the window [top, top + height) x [left, left + width) of the JPEG `data` at\n"
"1 / 2**shift of full size (window in pixels of that scale) as RGB into the writable buffer\n"
"`out`. The decoded block covers the window and may extend past it (one pixel of context\n"
"each way, and the left edge moved to a block boundary); it is stored row after row with no\n"
"padding. Returns (y0, x0, rows, columns, scaled_height, scaled_width): where the block\n"
"starts in the scaled image, its size, and the scaled image's size. Raises ValueError with\n"
"libjpeg's message when the data is not a JPEG it decodes, and with the reason for an\n"
"incomplete progressive file, a file that needs more than `max_memory` bytes of libjpeg\n"
"memory or has more than `max_scans` scans, and window coordinates out of range (top and\n"
"left 0 to 2**30 - 1, height and width 1 to 2**30 - 1).");

static PyObject *decode_window(PyObject *module, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"data", "shift", "top", "left", "height", "width", "out",
                               "fastdct", "fastupsample", "max_memory", "max_scans", NULL};
    Py_buffer data, out;
    PyObject *shift, *top, *left, *height, *width, *max_memory = NULL, *max_scans = NULL;
    Job job;
    (void)module;
    memset(&job, 0, sizeof(job));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*OOOOOw*|pp$OO", keywords, &data, &shift,
                                     &top, &left, &height, &width, &out, &job.fastdct,
                                     &job.fastupsample, &max_memory, &max_scans))
        return NULL;
    PyObject *result = NULL;
    if (parse_job(&job, shift, top, left, height, width, max_memory, max_scans) == 0) {
        job.data = data.buf;
        job.size = (size_t)data.len;
        job.out = out.buf;
        job.capacity = (size_t)out.len;
        Py_BEGIN_ALLOW_THREADS run(&job);
        Py_END_ALLOW_THREADS
        if (job.failed)
            PyErr_SetString(PyExc_ValueError, job.message);
        else
            result = Py_BuildValue("llllll", job.y0, job.x0, job.rows, job.columns,
                                   job.image_height, job.image_width);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_window", (PyCFunction)(void (*)(void))decode_window, METH_VARARGS | METH_KEYWORDS,
     decode_window_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jpeg_crop",
    "Window decodes of JPEGs at a DCT scale with the system's libjpeg-turbo.", -1, methods,
};

PyMODINIT_FUNC PyInit__jpeg_crop(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "LIBJPEG_TURBO_VERSION", LIBJPEG_TURBO_VERSION_NUMBER) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_MAX_MEMORY", DEFAULT_MAX_MEMORY) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_MAX_SCANS", DEFAULT_MAX_SCANS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
