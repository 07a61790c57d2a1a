/* Every verification group, in the order `kiln verify` runs them: a new group is one line
 * here and its cases_<group>.c. (An X-macro list: included with KILN_VERIFY_GROUP defined.) */
KILN_VERIFY_GROUP(matmul_elementwise)
KILN_VERIFY_GROUP(activation)
KILN_VERIFY_GROUP(norm)
KILN_VERIFY_GROUP(softmax)
KILN_VERIFY_GROUP(attention_entropy)
KILN_VERIFY_GROUP(cross_entropy)
KILN_VERIFY_GROUP(embedding)
KILN_VERIFY_GROUP(dropout)
KILN_VERIFY_GROUP(reduce)
KILN_VERIFY_GROUP(shape)
KILN_VERIFY_GROUP(constants)
KILN_VERIFY_GROUP(autograd)
