/* The Vulkan loader (through volk), the process-wide VkInstance, the validation layer, and
 * the device listing behind `kiln info`.
 *
 * One instance serves every context of the process: it is created by the first open (or
 * listing) and destroyed with the last context. volk loads the loader with dlopen, so a
 * machine without libvulkan gets a clear error instead of a failure to start.
 *
 * Any thread may open, close or list devices (the threading contract is in vk_internal.h):
 * g_instance_lock guards the instance, its reference count and the list of open devices
 * (and volk's instance-level function pointers, loaded when the instance is created; devices
 * use those, never volkLoadDevice, so nothing global changes per device). The validation
 * layer's callback may run on any thread, inside any Vulkan call, also one made under
 * g_instance_lock: its counts have a lock of their own. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vk_internal.h"

#define VK_MAX_TRACKED 64 /* open devices finished at exit; more are only closed by kiln_close */

static pthread_mutex_t g_instance_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_message_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    /* under g_instance_lock */
    int volk_ok;
    int refs;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    int validation; /* KILN_VK_VALIDATION set */
    int atexit_set;
    vk_dev *open[VK_MAX_TRACKED]; /* open devices, abandoned at exit */
    int n_open;
    /* under g_message_lock */
    int fail;     /* KILN_VK_VALIDATION=fail */
    int messages; /* validation messages seen (errors and warnings) */
    char first[400];
} g_vk;

void vk_track_device(vk_dev *d, int open) {
    pthread_mutex_lock(&g_instance_lock);
    for (int i = 0; i < g_vk.n_open; i++)
        if (g_vk.open[i] == d) g_vk.open[i--] = g_vk.open[--g_vk.n_open];
    if (open && g_vk.n_open < VK_MAX_TRACKED) g_vk.open[g_vk.n_open++] = d;
    pthread_mutex_unlock(&g_instance_lock);
}

int vk_min_limits_mode(void) {
    const char *e = getenv("KILN_VK_MIN_LIMITS");
    return e && *e && strcmp(e, "0") != 0;
}

/* KILN_VK_MAX_BINDING=BYTES lowers maxStorageBufferRange (never raises it): the test mode
 * in which small tensors already exceed one binding, so that the kernels that split their
 * work over several bindings (vk_split.c) are exercised without gigabytes of data. */
static void lower_binding_range(vk_caps *c) {
    const char *e = getenv("KILN_VK_MAX_BINDING");
    if (!e || !*e) return;
    char *end;
    unsigned long long v = strtoull(e, &end, 10);
    /* at least a few offset alignments, so a binding can still start anywhere */
    if (*end || v < 4 * c->min_ssbo_align || v < 1024) {
        fprintf(stderr, "kiln: KILN_VK_MAX_BINDING=%s ignored: give a byte count of at least 1024\n", e);
        return;
    }
    if (v < c->max_storage_range) c->max_storage_range = v;
}

int vk_layers_requested(void) {
    const char *l = getenv("VK_INSTANCE_LAYERS");
    pthread_mutex_lock(&g_instance_lock);
    int validation = g_vk.validation;
    pthread_mutex_unlock(&g_instance_lock);
    return validation || (l && *l);
}

int vk_validation_failures(const char **first) {
    pthread_mutex_lock(&g_message_lock);
    if (first) *first = g_vk.first; /* written once, with the first message */
    int n = g_vk.fail ? g_vk.messages : 0;
    pthread_mutex_unlock(&g_message_lock);
    return n;
}

/* In fail mode a process that saw validation messages must not exit 0, even when every op
 * it ran returned success (a message can arrive during teardown). */
static void validation_exit_check(void) {
    const char *first;
    int n = vk_validation_failures(&first);
    if (n > 0) {
        fprintf(stderr, "kiln: %d Vulkan validation message(s) (KILN_VK_VALIDATION=fail); first: %s\n", n, first);
        fflush(stderr);
        _exit(1);
    }
}

/* Contexts still open when the process exits are abandoned, not closed: by then the
 * driver's and the layers' exit-time destructors may have run (lavapipe compiles shaders
 * when work executes, and compiling after LLVM's destructors hangs; the validation layer
 * crashes when called after its own), so no further Vulkan call is made for them. Their
 * unsubmitted work is dropped: nothing can read its results any more. A later kiln_close
 * of such a context only frees host memory. */
static void finish_at_exit(void) {
    for (;;) {
        pthread_mutex_lock(&g_instance_lock);
        vk_dev *d = g_vk.n_open > 0 ? g_vk.open[g_vk.n_open - 1] : NULL;
        pthread_mutex_unlock(&g_instance_lock);
        if (!d) return;
        vk_abandon(d); /* forgets it (vk_track_device) */
    }
}

static VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT types,
                                                     const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                     void *user) {
    (void)user;
    /* The loader's own notes (e.g. "VK_INSTANCE_LAYERS adds a layer") are general
     * warnings, not validation findings. */
    if (!(types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) &&
        !(severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT))
        return VK_FALSE;
    const char *level = severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
    const char *msg = data && data->pMessage ? data->pMessage : "(no message)";
    fprintf(stderr, "kiln: Vulkan validation %s: %s\n", level, msg);
    pthread_mutex_lock(&g_message_lock);
    if (g_vk.messages++ == 0) snprintf(g_vk.first, sizeof g_vk.first, "%s", msg);
    pthread_mutex_unlock(&g_message_lock);
    return VK_FALSE;
}

static int has_layer(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkLayerProperties *props = calloc(n, sizeof *props);
    int found = 0;
    if (props && vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = !strcmp(props[i].layerName, name);
    free(props);
    return found;
}

/* An instance extension of the loader and drivers (layer NULL) or of one layer. */
static int has_instance_ext(const char *layer, const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(layer, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    int found = 0;
    if (props && vkEnumerateInstanceExtensionProperties(layer, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = !strcmp(props[i].extensionName, name);
    free(props);
    return found;
}

/* The layers, extensions and flags the instance is created with. */
typedef struct instance_request {
    const char *layers[1];
    uint32_t n_layers;
    const char *exts[4];
    uint32_t n_exts;
    VkInstanceCreateFlags flags;
    int sync_validation; /* the validation layer offers synchronization validation */
} instance_request;

/* volk finds the loader, which must speak Vulkan 1.1 at least; its version in *version. */
static kiln_status open_loader(uint32_t *version) {
    if (!g_vk.volk_ok) {
        if (volkInitialize() != VK_SUCCESS)
            return kiln_set_error(KILN_ERR_NO_BACKEND,
                                  "vulkan: the Vulkan loader (libvulkan.so.1) is not installed; install "
                                  "libvulkan1 and a driver (mesa-vulkan-drivers has the CPU driver lavapipe)");
        g_vk.volk_ok = 1;
    }
    *version = volkGetInstanceVersion();
    if (*version < VK_API_VERSION_1_1)
        return kiln_set_error(KILN_ERR_NO_BACKEND, "vulkan: the loader supports Vulkan %u.%u; kiln needs 1.1",
                              VK_API_VERSION_MAJOR(*version), VK_API_VERSION_MINOR(*version));
    return KILN_OK;
}

/* KILN_VK_VALIDATION's layer and extensions, and MoltenVK's opt-in. */
static kiln_status choose_layers(instance_request *rq) {
    const char *val = getenv("KILN_VK_VALIDATION");
    g_vk.validation = val && *val && strcmp(val, "0") != 0;
    pthread_mutex_lock(&g_message_lock);
    g_vk.fail = g_vk.validation && !strcmp(val, "fail");
    pthread_mutex_unlock(&g_message_lock);
    if (g_vk.validation) {
        if (!has_layer("VK_LAYER_KHRONOS_validation"))
            return kiln_set_error(KILN_ERR_NO_BACKEND,
                                  "vulkan: KILN_VK_VALIDATION is set but VK_LAYER_KHRONOS_validation is not "
                                  "installed (Debian: vulkan-validationlayers)");
        rq->layers[rq->n_layers++] = "VK_LAYER_KHRONOS_validation";
        rq->exts[rq->n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        rq->sync_validation =
            has_instance_ext("VK_LAYER_KHRONOS_validation", VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        if (rq->sync_validation) rq->exts[rq->n_exts++] = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
    }
    /* MoltenVK (Apple) is only enumerated when the application opts in */
    if (has_instance_ext(NULL, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        rq->exts[rq->n_exts++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        rq->flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    return KILN_OK;
}

/* g_vk.instance, and when validating its debug messenger (which also reports the
 * instance's creation). */
static kiln_status create_vk_instance(const instance_request *rq, uint32_t loader_version) {
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "kiln";
    app.pEngineName = "kiln";
    app.apiVersion = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : loader_version;
    /* Synchronization validation checks that kiln's barrier tracking is right, which a CPU
     * driver that runs dispatches one after another would otherwise never reveal. */
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    VkDebugUtilsMessengerCreateInfoEXT dbg = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    dbg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    dbg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    dbg.pfnUserCallback = debug_callback;
    if (rq->sync_validation) dbg.pNext = &features;

    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.flags = rq->flags;
    ci.pApplicationInfo = &app;
    ci.enabledLayerCount = rq->n_layers;
    ci.ppEnabledLayerNames = rq->layers;
    ci.enabledExtensionCount = rq->n_exts;
    ci.ppEnabledExtensionNames = rq->exts;
    if (g_vk.validation) ci.pNext = &dbg; /* also reports instance creation itself */
    VkResult r = vkCreateInstance(&ci, NULL, &g_vk.instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return kiln_set_error(KILN_ERR_NO_BACKEND,
                              "vulkan: no Vulkan driver found (install one, e.g. mesa-vulkan-drivers, or "
                              "check VK_ICD_FILENAMES / VK_DRIVER_FILES)");
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateInstance");
    volkLoadInstance(g_vk.instance);
    if (g_vk.validation) {
        dbg.pNext = NULL;
        r = vkCreateDebugUtilsMessengerEXT(g_vk.instance, &dbg, NULL, &g_vk.messenger);
        if (r != VK_SUCCESS) {
            vkDestroyInstance(g_vk.instance, NULL);
            g_vk.instance = VK_NULL_HANDLE;
            return vk_result(r, "vulkan: vkCreateDebugUtilsMessengerEXT");
        }
    }
    return KILN_OK;
}

/* Creates the instance (under g_instance_lock). */
static kiln_status create_instance(void) {
    uint32_t loader_version = 0;
    instance_request rq = {0};
    kiln_status s = open_loader(&loader_version);
    if (s == KILN_OK) s = choose_layers(&rq);
    if (s == KILN_OK) s = create_vk_instance(&rq, loader_version);
    if (s != KILN_OK) return s;
    /* Registered after each load of the driver (the loader unloads it with the last
     * instance and a forked child loads it anew), so that they run before the exit-time
     * destructors registered while loading it; validation_exit_check runs after
     * finish_at_exit. Capped: a program that reopens Vulkan thousands of times needs only
     * the newest registrations. */
    if (g_vk.atexit_set < 32) {
        atexit(validation_exit_check);
        atexit(finish_at_exit);
        g_vk.atexit_set++;
    }
    return KILN_OK;
}

static kiln_status list_physical_devices(VkInstance inst, vk_physical **out, uint32_t *count);

kiln_status vk_instance_open(VkInstance *inst, vk_physical **devs, uint32_t *count) {
    pthread_mutex_lock(&g_instance_lock);
    kiln_status s = g_vk.refs == 0 ? create_instance() : KILN_OK;
    if (!s) g_vk.refs++;
    VkInstance instance = g_vk.instance;
    pthread_mutex_unlock(&g_instance_lock);
    if (s) return s;
    s = list_physical_devices(instance, devs, count);
    if (s) {
        vk_instance_release();
        return s;
    }
    *inst = instance;
    return KILN_OK;
}

void vk_instance_release(void) {
    pthread_mutex_lock(&g_instance_lock);
    if (g_vk.refs > 0 && --g_vk.refs == 0) {
        if (g_vk.messenger) vkDestroyDebugUtilsMessengerEXT(g_vk.instance, g_vk.messenger, NULL);
        g_vk.messenger = VK_NULL_HANDLE;
        vkDestroyInstance(g_vk.instance, NULL);
        g_vk.instance = VK_NULL_HANDLE;
    }
    pthread_mutex_unlock(&g_instance_lock);
}

kiln_status vk_result(VkResult r, const char *what) {
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
        return kiln_set_error(KILN_ERR_MEMORY, "%s: out of host memory", what);
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
        return kiln_set_error(KILN_ERR_MEMORY, "%s: out of device memory (free tensors or use a smaller batch)", what);
    case VK_ERROR_DEVICE_LOST:
        return kiln_set_error(KILN_ERR_DEVICE, "%s: the Vulkan device was lost (driver reset or crash)", what);
    default:
        return kiln_set_error(KILN_ERR_DEVICE, "%s failed (VkResult %d)", what, (int)r);
    }
}

/* ---- physical devices ---- */

static int has_device_ext(VkPhysicalDevice pd, const char *name) {
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    int found = 0;
    if (props && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = !strcmp(props[i].extensionName, name);
    free(props);
    return found;
}

/* VK_KHR_cooperative_matrix postdates the headers of some distributions: declare what the
 * probe needs when they lack it (values from the Vulkan registry). */
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define KILN_VK_STYPE_COOPMAT_FEATURES ((VkStructureType)1000506000)
#define KILN_VK_STYPE_COOPMAT_PROPERTIES ((VkStructureType)1000506001)
typedef struct kiln_coopmat_features {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
} kiln_coopmat_features;
typedef struct kiln_coopmat_props {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    int AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    int scope; /* VkScopeKHR */
} kiln_coopmat_props;
typedef VkResult(VKAPI_PTR *kiln_coopmat_query_fn)(VkPhysicalDevice, uint32_t *, kiln_coopmat_props *);
#define KILN_COMPONENT_F16 0 /* VK_COMPONENT_TYPE_FLOAT16_KHR */
#define KILN_COMPONENT_F32 1 /* VK_COMPONENT_TYPE_FLOAT32_KHR */
#define KILN_SCOPE_SUBGROUP 3 /* VK_SCOPE_SUBGROUP_KHR */
#else
#define KILN_VK_STYPE_COOPMAT_FEATURES VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
#define KILN_VK_STYPE_COOPMAT_PROPERTIES VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
typedef VkPhysicalDeviceCooperativeMatrixFeaturesKHR kiln_coopmat_features;
typedef VkCooperativeMatrixPropertiesKHR kiln_coopmat_props;
typedef PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR kiln_coopmat_query_fn;
#define KILN_COMPONENT_F16 VK_COMPONENT_TYPE_FLOAT16_KHR
#define KILN_COMPONENT_F32 VK_COMPONENT_TYPE_FLOAT32_KHR
#define KILN_SCOPE_SUBGROUP VK_SCOPE_SUBGROUP_KHR
#endif

/* The cooperative-matrix GEMM uses KILN_ABI_VK_COOPMAT_TILE^3 f16 x f16 -> f32 tiles in
 * subgroup scope. */
static int coopmat_has_shape(VkInstance inst, VkPhysicalDevice pd) {
    kiln_coopmat_query_fn query = (kiln_coopmat_query_fn)(void *)vkGetInstanceProcAddr(
        inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    if (!query) return 0;
    uint32_t n = 0;
    if (query(pd, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    kiln_coopmat_props *p = calloc(n, sizeof *p);
    int found = 0;
    if (p) {
        for (uint32_t i = 0; i < n; i++) p[i].sType = KILN_VK_STYPE_COOPMAT_PROPERTIES;
        if (query(pd, &n, p) == VK_SUCCESS)
            for (uint32_t i = 0; i < n && !found; i++)
                found = p[i].MSize == KILN_ABI_VK_COOPMAT_TILE && p[i].NSize == KILN_ABI_VK_COOPMAT_TILE &&
                        p[i].KSize == KILN_ABI_VK_COOPMAT_TILE && (int)p[i].AType == KILN_COMPONENT_F16 &&
                        (int)p[i].BType == KILN_COMPONENT_F16 && (int)p[i].CType == KILN_COMPONENT_F32 &&
                        (int)p[i].ResultType == KILN_COMPONENT_F32 && (int)p[i].scope == KILN_SCOPE_SUBGROUP;
    }
    free(p);
    return found;
}

/* The properties kiln reads through vkGetPhysicalDeviceProperties2: the device's and
 * driver's UUIDs and the driver's name, into p; the subgroup and maintenance3 properties,
 * into *sg and *m3 for query_limits. */
static void query_properties(vk_physical *p, VkPhysicalDeviceSubgroupProperties *sg,
                             VkPhysicalDeviceMaintenance3Properties *m3) {
    VkPhysicalDevice pd = p->handle;
    vk_caps *c = &p->caps;
    VkPhysicalDeviceIDProperties ids = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    *sg = (VkPhysicalDeviceSubgroupProperties){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    *m3 = (VkPhysicalDeviceMaintenance3Properties){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    props2.pNext = sg;
    sg->pNext = m3;
    m3->pNext = &ids;
    c->driver_props = p->props.apiVersion >= VK_API_VERSION_1_2 ||
                      has_device_ext(pd, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    if (c->driver_props) ids.pNext = &drv;
    vkGetPhysicalDeviceProperties2(pd, &props2);
    sg->pNext = m3->pNext = NULL; /* the chain's other links die here */
    memcpy(p->device_uuid, ids.deviceUUID, VK_UUID_SIZE);
    memcpy(p->driver_uuid, ids.driverUUID, VK_UUID_SIZE);
    if (c->driver_props) {
        snprintf(p->driver_name, sizeof p->driver_name, "%s", drv.driverName);
        snprintf(p->driver_info, sizeof p->driver_info, "%s", drv.driverInfo);
    } else {
        snprintf(p->driver_name, sizeof p->driver_name, "driver 0x%x", p->props.driverVersion);
        p->driver_info[0] = 0;
    }
}

/* The optional features kiln uses (16-bit storage, float16, integer dot products, the
 * cooperative matrix), through vkGetPhysicalDeviceFeatures2 with each one's extension. */
static void query_features(VkInstance inst, vk_physical *p) {
    VkPhysicalDevice pd = p->handle;
    uint32_t api = p->props.apiVersion;
    vk_caps *c = &p->caps;
    VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    kiln_coopmat_features cm = {.sType = KILN_VK_STYPE_COOPMAT_FEATURES};
    VkPhysicalDeviceFeatures2 feats = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    feats.pNext = &s16;
    int has_f16 = api >= VK_API_VERSION_1_2 || has_device_ext(pd, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    int has_cm = has_device_ext(pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    /* the extension, also on Vulkan 1.3 devices (where it is core): the int8 product shaders
     * are SPIR-V 1.3 with SPV_KHR_integer_dot_product, which the extension allows on any
     * version, and the instance may be older than the device (vk_device.c enables it) */
    int has_idot = has_device_ext(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    VkPhysicalDeviceShaderIntegerDotProductFeatures idot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    void **tail = &s16.pNext;
    if (has_f16) {
        *tail = &f16;
        tail = &f16.pNext;
    }
    if (has_idot) {
        *tail = &idot;
        tail = &idot.pNext;
    }
    if (has_cm) *tail = &cm;
    vkGetPhysicalDeviceFeatures2(pd, &feats);
    c->storage16 = s16.storageBuffer16BitAccess;
    c->float16 = has_f16 && f16.shaderFloat16;
    /* the shader is SPIR-V 1.6 (Vulkan 1.3) */
    c->coopmat = has_cm && cm.cooperativeMatrix && c->storage16 && c->float16 && api >= VK_API_VERSION_1_3 &&
                 coopmat_has_shape(inst, pd);
    c->int_dot = has_idot && idot.shaderIntegerDotProduct;
    c->memory_budget = has_device_ext(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
}

/* The limits: the device's own, the subgroup's operations, and what the environment forces. */
static void query_limits(vk_physical *p, const VkPhysicalDeviceSubgroupProperties *sg,
                         const VkPhysicalDeviceMaintenance3Properties *m3) {
    VkPhysicalDevice pd = p->handle;
    vk_caps *c = &p->caps;
    const VkPhysicalDeviceLimits *l = &p->props.limits;
    c->max_wg_invocations = l->maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++) {
        c->max_wg_size[i] = l->maxComputeWorkGroupSize[i];
        c->max_wg_count[i] = l->maxComputeWorkGroupCount[i];
    }
    c->max_shared_bytes = l->maxComputeSharedMemorySize;
    c->max_push_bytes = l->maxPushConstantsSize;
    c->max_storage_buffers = l->maxPerStageDescriptorStorageBuffers;
    c->max_storage_range = l->maxStorageBufferRange;
    c->max_alloc_bytes = m3->maxMemoryAllocationSize ? m3->maxMemoryAllocationSize : ((uint64_t)1 << 30);
    c->min_ssbo_align = l->minStorageBufferOffsetAlignment;
    c->min_texel_align = l->minTexelBufferOffsetAlignment;
    c->max_texel_elements = l->maxTexelBufferElements;
    c->max_alloc_count = l->maxMemoryAllocationCount;
    c->subgroup_size = sg->subgroupSize;
    c->subgroup_arith = (sg->supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                        (sg->supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                        (sg->supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
    c->subgroup_shuffle = (sg->supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sg->supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    const char *lanes = getenv("KILN_VK_QMATMUL_LANES"); /* a power of two up to 64, else ignored */
    long forced = lanes && *lanes ? strtol(lanes, NULL, 10) : 0;
    c->qmatmul_lanes = forced >= 1 && forced <= 64 && (forced & (forced - 1)) == 0 ? (uint32_t)forced : 0;
    c->portability_subset = has_device_ext(pd, "VK_KHR_portability_subset");
    VkFormatProperties half4;
    vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R16G16B16A16_SFLOAT, &half4);
    c->texel_f16 = (half4.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
    c->timestamp_period = l->timestampPeriod;
}

/* The queue family kiln submits to: any with compute, preferably one with timestamps. */
static void choose_queue_family(vk_physical *p) {
    VkPhysicalDevice pd = p->handle;
    vk_caps *c = &p->caps;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties *q = calloc(nq ? nq : 1, sizeof *q);
    p->queue_family = UINT32_MAX;
    if (q) {
        vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q);
        for (uint32_t i = 0; i < nq; i++) {
            if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
            if (p->queue_family == UINT32_MAX || (!c->timestamp_bits && q[i].timestampValidBits)) {
                p->queue_family = i;
                c->timestamp_bits = q[i].timestampValidBits;
            }
        }
    }
    free(q);
}

/* The limits and features kiln uses, queried from the device, and whether it can run kiln. */
static void query_caps(VkInstance inst, vk_physical *p) {
    VkPhysicalDeviceSubgroupProperties sg;
    VkPhysicalDeviceMaintenance3Properties m3;
    query_properties(p, &sg, &m3);
    query_features(inst, p);
    query_limits(p, &sg, &m3);
    choose_queue_family(p);
    vkGetPhysicalDeviceMemoryProperties(p->handle, &p->mem);
    p->device_memory = 0;
    for (uint32_t i = 0; i < p->mem.memoryHeapCount; i++)
        if (p->mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) p->device_memory += p->mem.memoryHeaps[i].size;
    if (p->props.apiVersion < VK_API_VERSION_1_1)
        p->unusable = "needs Vulkan 1.1";
    else if (p->queue_family == UINT32_MAX)
        p->unusable = "has no compute queue";
    else if (p->caps.max_storage_buffers < VK_MAX_OPERANDS)
        p->unusable = "allows fewer than 8 storage buffers per shader stage";
    else
        p->unusable = NULL;
}

/* Vulkan's required minimums (Vulkan 1.1 core, maintenance3), and no optional feature:
 * the test mode that shows kiln runs on the smallest conformant device. The storage-buffer
 * count stays real: kiln needs 8 per kernel and refuses devices with fewer. */
static void lower_to_minimums(vk_caps *c) {
    c->max_wg_invocations = 128;
    c->max_wg_size[0] = 128, c->max_wg_size[1] = 128, c->max_wg_size[2] = 64;
    for (int i = 0; i < 3; i++) c->max_wg_count[i] = 65535;
    c->max_shared_bytes = 16384;
    c->max_push_bytes = 128;
    c->max_storage_range = (uint64_t)1 << 27;
    c->max_alloc_bytes = (uint64_t)1 << 30;
    c->min_ssbo_align = 256;
    c->min_texel_align = 256;
    c->max_texel_elements = 65536;
    c->max_alloc_count = 4096;
    c->subgroup_size = 0;
    c->subgroup_arith = 0;
    c->subgroup_shuffle = 0;
    c->storage16 = 0;
    c->float16 = 0;
    c->coopmat = 0;
    c->int_dot = 0; /* kiln_matmul_q keeps its f32, words-only kernel (vk_quant.c) */
    c->texel_f16 = 0;
}

/* The physical devices, in the order `vulkan:N` counts them. */
static kiln_status list_physical_devices(VkInstance inst, vk_physical **out, uint32_t *count) {
    *out = NULL;
    *count = 0;
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(inst, &n, NULL);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkEnumeratePhysicalDevices");
    if (n == 0)
        return kiln_set_error(KILN_ERR_NO_BACKEND,
                              "vulkan: no Vulkan device found (install a driver, e.g. mesa-vulkan-drivers, "
                              "or check VK_ICD_FILENAMES / VK_DRIVER_FILES)");
    VkPhysicalDevice *handles = calloc(n, sizeof *handles);
    vk_physical *devs = calloc(n, sizeof *devs);
    if (!handles || !devs) {
        free(handles);
        free(devs);
        return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    }
    r = vkEnumeratePhysicalDevices(inst, &n, handles);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(handles);
        free(devs);
        return vk_result(r, "vulkan: vkEnumeratePhysicalDevices");
    }
    int minimal = vk_min_limits_mode();
    for (uint32_t i = 0; i < n; i++) {
        devs[i].handle = handles[i];
        vkGetPhysicalDeviceProperties(handles[i], &devs[i].props);
        query_caps(inst, &devs[i]);
        if (minimal) lower_to_minimums(&devs[i].caps);
        lower_binding_range(&devs[i].caps);
    }
    free(handles);
    *out = devs;
    *count = n;
    return KILN_OK;
}

static int type_rank(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

int vk_pick_best(const vk_physical *devs, uint32_t count) {
    int best = -1;
    for (uint32_t i = 0; i < count; i++) {
        if (devs[i].unusable) continue;
        if (best < 0 || type_rank(devs[i].props.deviceType) > type_rank(devs[best].props.deviceType)) best = (int)i;
    }
    return best;
}

static const char *vk_device_type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

static const char *yes_no(int v) { return v ? "yes" : "no"; }

kiln_status kiln_vulkan_list(void *out_file) {
    FILE *f = out_file;
    VkInstance inst;
    vk_physical *devs;
    uint32_t n;
    kiln_status s = vk_instance_open(&inst, &devs, &n);
    if (s) return s;
    int best = vk_pick_best(devs, n);
    for (uint32_t i = 0; i < n; i++) {
        const vk_physical *p = &devs[i];
        const vk_caps *c = &p->caps;
        uint32_t api = p->props.apiVersion;
        fprintf(f, "vulkan:%u  %s  [%s%s]%s%s\n", i, p->props.deviceName, vk_device_type_name(p->props.deviceType),
                (int)i == best ? ", default" : "", p->unusable ? "  unusable: " : "", p->unusable ? p->unusable : "");
        /* memory the host can map in a device-local heap is the host's own (vk_memory.c) */
        int unified = 0;
        for (uint32_t t = 0; t < p->mem.memoryTypeCount; t++) {
            VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
            if ((p->mem.memoryTypes[t].propertyFlags & want) == want) unified = 1;
        }
        VkDeviceSize budget = p->device_memory;
        char used[64] = "";
        if (vk_memory_budget(p, p->device_memory, unified, &budget) == KILN_OK && budget != p->device_memory)
            snprintf(used, sizeof used, " (kiln uses up to %.1f GiB)", (double)budget / (1024.0 * 1024.0 * 1024.0));
        fprintf(f, "          driver %s%s%s%s, Vulkan %u.%u.%u, memory %.1f GiB%s, subgroup size %u\n", p->driver_name,
                p->driver_info[0] ? " (" : "", p->driver_info, p->driver_info[0] ? ")" : "",
                VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api), VK_API_VERSION_PATCH(api),
                (double)p->device_memory / (1024.0 * 1024.0 * 1024.0), used, c->subgroup_size);
        int coop_built = vk_shader_built(VK_SHADER_gemm_coopmat);
        fprintf(f, "          16-bit storage %s, f16 arithmetic %s, subgroup arithmetic %s, cooperative matrix %s%s\n",
                yes_no(c->storage16), yes_no(c->float16), yes_no(c->subgroup_arith), yes_no(c->coopmat),
                c->coopmat && !coop_built ? " (not in this build: glslc lacks GL_KHR_cooperative_matrix)" : "");
        fprintf(f, "          integer dot product %s%s\n", yes_no(c->int_dot),
                c->int_dot ? " (quantized products on int8-rounded activations, as the CPU)" : "");
        fprintf(f, "          max buffer %.0f MiB (one binding %.0f MiB), shared memory %u KiB, workgroup %u invocations%s\n",
                (double)c->max_alloc_bytes / (1024.0 * 1024.0), (double)c->max_storage_range / (1024.0 * 1024.0),
                c->max_shared_bytes / 1024, c->max_wg_invocations,
                vk_min_limits_mode() ? " (KILN_VK_MIN_LIMITS: Vulkan minimums)" : "");
    }
    free(devs);
    vk_instance_release();
    return KILN_OK;
}
