// Usage-key permission sets the suites start from (every suite: no Node or workerd imports here).

/** Usage-key permissions with every flag off and every list empty; spread and override. */
export const NO_PERMISSIONS = {
  can_create_groups: false,
  can_delete_groups: false,
  can_create_pkps: false,
  manage_ipfs_ids_in_groups: [] as Array<string | number>,
  add_pkp_to_groups: [] as Array<string | number>,
  remove_pkp_from_groups: [] as Array<string | number>,
  execute_in_groups: [] as Array<string | number>,
};

/** Every permission, in every group (`[0]`). */
export const ALL_PERMISSIONS = {
  can_create_groups: true,
  can_delete_groups: true,
  can_create_pkps: true,
  manage_ipfs_ids_in_groups: [0] as Array<string | number>,
  add_pkp_to_groups: [0] as Array<string | number>,
  remove_pkp_from_groups: [0] as Array<string | number>,
  execute_in_groups: [0] as Array<string | number>,
};
